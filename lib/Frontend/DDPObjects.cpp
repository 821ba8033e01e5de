//===- DDPObjects.cpp -----------------------------------------------------===//

#include "DDPObjects.h"
#include "Callers.h"
#include "clang/AST/DeclCXX.h"
#include "clang/AST/DeclTemplate.h"
#include "clang/AST/StmtVisitor.h"
#include "clang/Lex/Lexer.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"
#include <functional>

using namespace clang;

namespace ddpguard {
namespace clangfe {

DDPObjects::DDPObjects(ASTContext &Context, const RuleSet &Rules,
                       bool AssumeModulesHaveBuffers)
    : Context(Context), Rules(Rules),
      AssumeModulesHaveBuffers(AssumeModulesHaveBuffers) {}

DDPObjects::~DDPObjects() = default;

const Expr *skipImplicit(const Expr *E) {
  while (E) {
    const Expr *Next = E->IgnoreImplicit()->IgnoreParens();
    if (const auto *Construct = dyn_cast<CXXConstructExpr>(Next)) {
      const CXXConstructorDecl *Ctor = Construct->getConstructor();
      if (Construct->getNumArgs() == 1 && Ctor &&
          (Ctor->isCopyOrMoveConstructor() || Ctor->isConvertingConstructor(false)) &&
          !isa<CXXTemporaryObjectExpr>(Construct))
        Next = Construct->getArg(0);
    } else if (const auto *Cast = dyn_cast<CXXFunctionalCastExpr>(Next)) {
      Next = Cast->getSubExpr();
    }
    if (Next == E)
      return E;
    E = Next;
  }
  return E;
}

StringRef sourceText(SourceRange Range, const ASTContext &Context) {
  return Lexer::getSourceText(CharSourceRange::getTokenRange(Range),
                              Context.getSourceManager(),
                              Context.getLangOpts());
}

void forEachStmt(const Stmt *Root,
                 const std::function<void(const Stmt *)> &Visit) {
  if (!Root)
    return;
  Visit(Root);
  if (isa<LambdaExpr>(Root))
    return;
  for (const Stmt *Child : Root->children())
    forEachStmt(Child, Visit);
}

std::string qualifiedName(const CXXRecordDecl *Record) {
  const NamedDecl *Named = Record;
  if (const auto *Spec = dyn_cast<ClassTemplateSpecializationDecl>(Record))
    Named = Spec->getSpecializedTemplate();
  PrintingPolicy Policy(Record->getASTContext().getLangOpts());
  Policy.SuppressInlineNamespace = true;
  Policy.SuppressUnwrittenScope = true;
  std::string Name;
  llvm::raw_string_ostream OS(Name);
  Named->printQualifiedName(OS, Policy);
  return OS.str();
}

static bool isSmartPointer(StringRef Name) {
  return Name == "std::shared_ptr" || Name == "std::unique_ptr";
}

QualType pointee(QualType Type) {
  for (;;) {
    Type = Type.getNonReferenceType();
    if (const auto *Pointer = Type->getAs<PointerType>()) {
      Type = Pointer->getPointeeType();
      continue;
    }
    const auto *Spec = dyn_cast_or_null<ClassTemplateSpecializationDecl>(
        Type->getAsCXXRecordDecl());
    if (Spec && isSmartPointer(qualifiedName(Spec)) &&
        Spec->getTemplateArgs().size() > 0 &&
        Spec->getTemplateArgs()[0].getKind() == TemplateArgument::Type) {
      Type = Spec->getTemplateArgs()[0].getAsType();
      continue;
    }
    return Type;
  }
}

const CXXRecordDecl *heldModule(const CXXRecordDecl *Record) {
  if (!Record || !Record->hasDefinition())
    return nullptr;
  Record = Record->getDefinition();
  if (const auto *Spec = dyn_cast<ClassTemplateSpecializationDecl>(Record))
    if (qualifiedName(Spec) == "torch::nn::ModuleHolder") {
      const TemplateArgumentList &Args = Spec->getTemplateArgs();
      return Args.size() > 0 && Args[0].getKind() == TemplateArgument::Type
                 ? Args[0].getAsType()->getAsCXXRecordDecl()
                 : nullptr;
    }
  for (const CXXBaseSpecifier &Base : Record->bases())
    if (const CXXRecordDecl *Held =
            heldModule(Base.getType()->getAsCXXRecordDecl()))
      return Held;
  return nullptr;
}

bool accessedThroughArrow(QualType Type) {
  Type = Type.getNonReferenceType();
  if (Type->isPointerType())
    return true;
  const CXXRecordDecl *Record = Type->getAsCXXRecordDecl();
  return Record && (StringRef(qualifiedName(Record)).ends_with("_ptr") ||
                    heldModule(Record));
}

bool isLibraryDecl(const Decl *D) {
  if (!D)
    return false;
  if (D->getASTContext().getSourceManager().isInSystemHeader(D->getLocation()))
    return true;
  const NamespaceDecl *Outermost = nullptr;
  for (const DeclContext *DC = D->getDeclContext(); DC; DC = DC->getParent())
    if (const auto *Namespace = dyn_cast<NamespaceDecl>(DC))
      Outermost = Namespace;
  if (!Outermost || !Outermost->getIdentifier())
    return false;
  return llvm::is_contained({"std", "torch", "at", "c10", "c10d", "caffe2"},
                            Outermost->getName());
}

/// The class a qualified name names in the translation unit, or null.
static const CXXRecordDecl *findRecord(ASTContext &Context,
                                       StringRef Qualified) {
  llvm::SmallVector<StringRef, 4> Parts;
  Qualified.ltrim(':').split(Parts, "::");
  const DeclContext *Scope = Context.getTranslationUnitDecl();
  const NamedDecl *Found = nullptr;
  for (StringRef Part : Parts) {
    if (!Scope || Part.empty())
      return nullptr;
    Found = nullptr;
    for (const NamedDecl *D : Scope->lookup(&Context.Idents.get(Part)))
      if (isa<NamespaceDecl, CXXRecordDecl>(D)) {
        Found = D;
        break;
      }
    Scope = dyn_cast_or_null<DeclContext>(Found);
  }
  const auto *Record = dyn_cast_or_null<CXXRecordDecl>(Found);
  return Record ? Record->getDefinition() : nullptr;
}

const WrapperRule *DDPObjects::holderRule(const CXXRecordDecl *Module) {
  if (!HolderRules) {
    HolderRules.emplace();
    for (const WrapperRule &Rule : Rules.wrappers())
      if (const CXXRecordDecl *Held =
              heldModule(findRecord(Context, Rule.Type)))
        (*HolderRules)[Held->getCanonicalDecl()] = Rules.find(Rule.Type);
  }
  return HolderRules->lookup(Module->getCanonicalDecl());
}

const WrapperRule *DDPObjects::ruleFor(QualType Written) {
  if (Written.isNull())
    return nullptr;
  QualType Type = pointee(Written);
  if (Type->isDependentType())
    return nullptr;
  const clang::Type *Key = Type.getCanonicalType().getTypePtr();
  auto Cached = RuleCache.find(Key);
  if (Cached != RuleCache.end())
    return Cached->second;
  RuleCache[Key] = nullptr;
  const WrapperRule *Rule = nullptr;
  if (const CXXRecordDecl *Record = Type->getAsCXXRecordDecl()) {
    Rule = Rules.find(qualifiedName(Record));
    // A holder's module class (`w->forward(x)`), or a holder
    // (torch::nn::ModuleHolder<Impl>, a base of the holder) whose module
    // class the rule names.
    if (!Rule && Record->hasDefinition())
      Rule = holderRule(Record);
    if (!Rule)
      if (const CXXRecordDecl *Held = heldModule(Record))
        if (isa<ClassTemplateSpecializationDecl>(Record) &&
            qualifiedName(Record) == "torch::nn::ModuleHolder")
          Rule = ruleFor(Context.getRecordType(Held));
    if (!Rule && Record->hasDefinition())
      for (const CXXBaseSpecifier &Base : Record->bases())
        if ((Rule = ruleFor(Base.getType())))
          break;
  }
  RuleCache[Key] = Rule;
  return Rule;
}

const ValueDecl *DDPObjects::objectOf(const Expr *E) {
  E = skipImplicit(E);
  if (!E)
    return nullptr;
  if (const auto *Ref = dyn_cast<DeclRefExpr>(E)) {
    const auto *Var = dyn_cast<VarDecl>(Ref->getDecl());
    if (!Var)
      return nullptr;
    // A local reference is an alias of what it was bound to.
    if (Var->getType()->isReferenceType() && !isa<ParmVarDecl>(Var) &&
        Var->getInit())
      if (const ValueDecl *Target = objectOf(Var->getInit()))
        return Target;
    return Var;
  }
  if (const auto *Member = dyn_cast<MemberExpr>(E))
    return dyn_cast<FieldDecl>(Member->getMemberDecl());
  if (const auto *Unary = dyn_cast<UnaryOperator>(E))
    if (Unary->getOpcode() == UO_Deref || Unary->getOpcode() == UO_AddrOf)
      return objectOf(Unary->getSubExpr());
  if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(E))
    if ((Op->getOperator() == OO_Star || Op->getOperator() == OO_Arrow) &&
        Op->getNumArgs() == 1)
      return objectOf(Op->getArg(0));
  if (const auto *Call = dyn_cast<CXXMemberCallExpr>(E))
    if (const CXXMethodDecl *Method = Call->getMethodDecl())
      if (Method->getIdentifier() &&
          (Method->getName() == "get" || Method->getName() == "ptr"))
        return objectOf(Call->getImplicitObjectArgument());
  return nullptr;
}

static std::string methodName(const CXXMethodDecl *Method) {
  if (Method->getOverloadedOperator() == OO_Call)
    return "operator()";
  if (const IdentifierInfo *Id = Method->getIdentifier())
    return Id->getName().str();
  return "";
}

std::optional<ForwardCall> DDPObjects::matchForward(const Stmt *S) {
  ForwardCall Forward;
  if (const auto *Call = dyn_cast<CXXMemberCallExpr>(S)) {
    const CXXMethodDecl *Method = Call->getMethodDecl();
    const Expr *Object = Call->getImplicitObjectArgument();
    if (!Method || !Object)
      return std::nullopt;
    Forward.Rule = ruleFor(Object->getType());
    if (!Forward.Rule || !Forward.Rule->isForwardMethod(methodName(Method)))
      return std::nullopt;
    Forward.IsFused = methodName(Method) == Forward.Rule->FusedForward;
    Forward.ObjectExpr = Object;
    if (const auto *Member =
            dyn_cast<MemberExpr>(Call->getCallee()->IgnoreParens())) {
      Forward.ThroughArrow = Member->isArrow();
      Forward.ObjectExpr = Member->getBase();
      // A smart pointer's operator-> spans `p->`; the object is `p`.
      if (const auto *Arrow = dyn_cast<CXXOperatorCallExpr>(
              Forward.ObjectExpr->IgnoreImplicit()))
        if (Arrow->getOperator() == OO_Arrow && Arrow->getNumArgs() == 1)
          Forward.ObjectExpr = Arrow->getArg(0);
    }
    Forward.Args.append(Call->arg_begin(), Call->arg_end());
  } else if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(S)) {
    if (Op->getOperator() != OO_Call || Op->getNumArgs() == 0)
      return std::nullopt;
    QualType ObjectType = Op->getArg(0)->getType();
    Forward.Rule = ruleFor(ObjectType);
    // A holder's call operator runs its module's forward.
    const CXXRecordDecl *Record = ObjectType->getAsCXXRecordDecl();
    bool Holder = Record && heldModule(Record);
    if (!Forward.Rule || !(Forward.Rule->isForwardMethod("operator()") ||
                           (Holder && Forward.Rule->isForwardMethod("forward"))))
      return std::nullopt;
    Forward.ObjectExpr = Op->getArg(0);
    // The holder's other methods are its module's, reached with `->`.
    Forward.ThroughArrow = Holder;
    Forward.Args.append(Op->arg_begin() + 1, Op->arg_end());
  } else {
    return std::nullopt;
  }
  Forward.Call = cast<Expr>(S);
  Forward.Object = objectOf(Forward.ObjectExpr);
  // What the expression names may be no DDP object (`(*it).forward(x)` on an
  // iterator): a temporary, as far as objects go.
  if (Forward.Object && !ruleFor(Forward.Object->getType()))
    Forward.Object = nullptr;
  return Forward;
}

/// The value inside an implicit std::optional<bool>(value): LibTorch 2.13's
/// options hold optional settings, such as ddpguard's broadcast_buffers.
static const Expr *unwrapOptional(const Expr *E) {
  const auto *Construct =
      E ? dyn_cast<CXXConstructExpr>(E->IgnoreImplicit()) : nullptr;
  if (!Construct || Construct->getNumArgs() != 1)
    return E;
  const auto *Record = Construct->getType()->getAsCXXRecordDecl();
  if (!Record || !Record->isInStdNamespace() || !Record->getIdentifier() ||
      Record->getName() != "optional")
    return E;
  const Expr *Inner = Construct->getArg(0)->IgnoreImplicit();
  return Inner->getType()->isBooleanType() ? Inner : E;
}

std::optional<bool> DDPObjects::evaluateBool(const Expr *E) {
  bool Value;
  E = unwrapOptional(E);
  if (E && !E->isValueDependent() &&
      E->EvaluateAsBooleanCondition(Value, Context))
    return Value;
  return std::nullopt;
}

static BroadcastState stateOf(std::optional<bool> Value) {
  if (!Value)
    return BroadcastState::Unknown;
  return *Value ? BroadcastState::SetTrue : BroadcastState::SetFalse;
}

/// `register_module("name", M)`: LibTorch's registration hands M back.
static const Expr *registeredModule(const CallExpr *Call) {
  const auto *Member = dyn_cast<CXXMemberCallExpr>(Call);
  const CXXMethodDecl *Method = Member ? Member->getMethodDecl() : nullptr;
  if (!Method || !Method->getIdentifier() ||
      Method->getName() != "register_module" || Call->getNumArgs() != 2 ||
      Method->getParent()->getQualifiedNameAsString() != "torch::nn::Module")
    return nullptr;
  return Call->getArg(1);
}

/// A holder constructed empty (`W w{nullptr}`): its module comes later.
static bool isEmptyHolder(const CXXConstructExpr *Construct) {
  return heldModule(Construct->getType()->getAsCXXRecordDecl()) &&
         Construct->getNumArgs() == 1 &&
         Construct->getArg(0)->IgnoreImplicit()->getType()->isNullPtrType();
}

static const Expr *constructingExpr(const Expr *Init,
                                    llvm::SmallVectorImpl<const Expr *> &Args,
                                    const CallExpr **Factory, unsigned Depth);

/// The construction a factory call returns: the callee's body is in the
/// translation unit, outside libraries, and its one return statement returns
/// a construction. Null otherwise.
static const Expr *factoryConstruction(const CallExpr *Call,
                                       llvm::SmallVectorImpl<const Expr *> &Args,
                                       unsigned Depth) {
  const FunctionDecl *Callee = Call->getDirectCallee();
  const FunctionDecl *Definition = nullptr;
  if (!Callee || Depth > 4 || !Callee->hasBody(Definition) || !Definition ||
      isLibraryDecl(Definition) || Definition->isDependentContext() ||
      Definition->getReturnType()->isReferenceType() ||
      Definition->getReturnType()->isPointerType())
    return nullptr;
  const Expr *Found = nullptr;
  unsigned Returns = 0;
  llvm::SmallVector<const Expr *, 4> FoundArgs;
  forEachStmt(Definition->getBody(), [&](const Stmt *S) {
    const auto *Return = dyn_cast<ReturnStmt>(S);
    if (!Return)
      return;
    ++Returns;
    if (Return->getRetValue())
      Found = constructingExpr(Return->getRetValue(), FoundArgs, nullptr,
                               Depth + 1);
  });
  if (Returns != 1 || !Found)
    return nullptr;
  Args.append(FoundArgs.begin(), FoundArgs.end());
  return Found;
}

/// The constructing expression inside an initializer: a constructor call,
/// std::make_shared/make_unique, new, a registration (`register_module`) or
/// a factory in the translation unit (then Factory, if given, is its call).
static const Expr *constructingExpr(const Expr *Init,
                                    llvm::SmallVectorImpl<const Expr *> &Args,
                                    const CallExpr **Factory = nullptr,
                                    unsigned Depth = 0) {
  for (;;) {
    Init = skipImplicit(Init);
    if (const auto *New = dyn_cast_or_null<CXXNewExpr>(Init)) {
      Init = New->getInitializer();
      continue;
    }
    const auto *Call = dyn_cast_or_null<CallExpr>(Init);
    if (const Expr *Registered = Call ? registeredModule(Call) : nullptr) {
      Init = Registered;
      continue;
    }
    // A smart pointer or holder made from a pointer or smart pointer
    // (`std::shared_ptr<M>(new M(...))`, `W(std::make_shared<WImpl>(...))`).
    const auto *Construct = dyn_cast_or_null<CXXConstructExpr>(Init);
    if (Construct && Construct->getNumArgs() == 1 &&
        accessedThroughArrow(Construct->getType()) &&
        accessedThroughArrow(Construct->getArg(0)->getType()) &&
        !isEmptyHolder(Construct)) {
      Init = Construct->getArg(0);
      continue;
    }
    break;
  }
  if (!Init)
    return nullptr;
  if (const auto *Construct = dyn_cast<CXXConstructExpr>(Init)) {
    if (isEmptyHolder(Construct))
      return nullptr;
    Args.append(Construct->arg_begin(), Construct->arg_end());
    return Construct;
  }
  if (const auto *Call = dyn_cast<CallExpr>(Init))
    if (const FunctionDecl *Callee = Call->getDirectCallee()) {
      std::string Name = Callee->getQualifiedNameAsString();
      if (Name == "std::make_shared" || Name == "std::make_unique") {
        Args.append(Call->arg_begin(), Call->arg_end());
        return Call;
      }
      if (const Expr *Made = factoryConstruction(Call, Args, Depth)) {
        if (Factory && !*Factory)
          *Factory = Call;
        return Made;
      }
    }
  if (const auto *List = dyn_cast<InitListExpr>(Init)) {
    for (const Stmt *Element : *List)
      Args.push_back(cast<Expr>(Element));
    return List;
  }
  return nullptr;
}

static const Expr *assignedValue(const Stmt *S, const Expr *&Target) {
  if (const auto *Assign = dyn_cast<BinaryOperator>(S))
    if (Assign->getOpcode() == BO_Assign) {
      Target = Assign->getLHS();
      return Assign->getRHS();
    }
  if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(S))
    if (Op->getOperator() == OO_Equal && Op->getNumArgs() == 2) {
      Target = Op->getArg(0);
      return Op->getArg(1);
    }
  return nullptr;
}

void DDPObjects::findConstructionExpr(Construction &C) {
  // The first assignment of a construction to the object in Body
  // (`w = W(...)` after `W w{nullptr}`).
  auto FindAssigned = [&](const Stmt *Body) {
    forEachStmt(Body, [&](const Stmt *S) {
      const Expr *Target = nullptr;
      if (const Expr *Value = assignedValue(S, Target))
        if (!C.Expr && objectOf(Target) == C.Object) {
          C.Args.clear();
          C.Expr = constructingExpr(Value, C.Args, &C.FactoryCall);
        }
    });
  };
  if (const auto *Var = dyn_cast<VarDecl>(C.Object)) {
    if (isa<ParmVarDecl>(Var) || Var->getType()->isReferenceType())
      return;
    if (Var->getInit())
      C.Expr = constructingExpr(Var->getInit(), C.Args, &C.FactoryCall);
    if (const auto *Function =
            dyn_cast_or_null<FunctionDecl>(Var->getParentFunctionOrMethod())) {
      forEachStmt(Function->getBody(), [&](const Stmt *S) {
        if (const auto *Decl = dyn_cast<DeclStmt>(S))
          if (llvm::is_contained(Decl->decls(), Var))
            C.DeclStatement = Decl;
      });
      if (!C.Expr) {
        C.Args.clear();
        FindAssigned(Function->getBody());
        // Settings after the declaration are not after the construction.
        if (C.Expr)
          C.DeclStatement = nullptr;
      }
    }
    return;
  }
  const auto *Field = dyn_cast<FieldDecl>(C.Object);
  if (!Field)
    return;
  if (Field->hasInClassInitializer() && Field->getInClassInitializer()) {
    C.Expr = constructingExpr(Field->getInClassInitializer(), C.Args,
                              &C.FactoryCall);
    if (C.Expr)
      return;
    C.Args.clear();
  }
  for (const CXXConstructorDecl *Ctor : cast<CXXRecordDecl>(Field->getParent())->ctors()) {
    for (const CXXCtorInitializer *Init : Ctor->inits())
      if (Init->isWritten() && Init->getMember() == Field) {
        C.Expr = constructingExpr(Init->getInit(), C.Args, &C.FactoryCall);
        if (C.Expr)
          return;
        C.Args.clear();
      }
    FindAssigned(Ctor->getBody());
    if (C.Expr)
      return;
  }
}

/// The body in which a setting of the object may appear after construction.
static const Stmt *settingScope(const ValueDecl *Object) {
  if (const auto *Var = dyn_cast<VarDecl>(Object))
    if (const auto *Function =
            dyn_cast_or_null<FunctionDecl>(Var->getParentFunctionOrMethod()))
      return Function->getBody();
  return nullptr;
}

DDPObjects::OptionSetter
DDPObjects::findOptionSetter(const Construction &C, const Expr *Options,
                             StringRef Setter) {
  OptionSetter Found;
  const Expr *E = skipImplicit(Options);
  while (E) {
    if (const auto *Call = dyn_cast<CXXMemberCallExpr>(E)) {
      const CXXMethodDecl *Method = Call->getMethodDecl();
      if (Method && methodName(Method) == Setter && Call->getNumArgs() == 1) {
        Found.Argument = Call->getArg(0);
        return Found;
      }
      E = skipImplicit(Call->getImplicitObjectArgument());
      continue;
    }
    if (const auto *Ref = dyn_cast<DeclRefExpr>(E)) {
      const auto *Var = dyn_cast<VarDecl>(Ref->getDecl());
      if (!Var) {
        Found.Unknown = true;
        return Found;
      }
      Found.Variable = Var;
      // The last setter call on the variable before the construction wins.
      const CXXMemberCallExpr *LastSetter = nullptr;
      const SourceManager &SM = Context.getSourceManager();
      forEachStmt(settingScope(Var), [&](const Stmt *S) {
        const auto *Call = dyn_cast<CXXMemberCallExpr>(S);
        if (!Call || !Call->getMethodDecl() ||
            methodName(Call->getMethodDecl()) != Setter ||
            Call->getNumArgs() != 1)
          return;
        const auto *On = dyn_cast<DeclRefExpr>(
            skipImplicit(Call->getImplicitObjectArgument()));
        if (On && On->getDecl() == Var && C.Expr &&
            SM.isBeforeInTranslationUnit(Call->getBeginLoc(),
                                         C.Expr->getBeginLoc()) &&
            !(Var->getInit() &&
              !SM.isBeforeInTranslationUnit(Var->getInit()->getEndLoc(),
                                            Call->getBeginLoc())))
          LastSetter = Call;
      });
      if (LastSetter) {
        Found.Argument = LastSetter->getArg(0);
        return Found;
      }
      if (isa<ParmVarDecl>(Var) || !Var->getInit()) {
        Found.Unknown = isa<ParmVarDecl>(Var);
        return Found;
      }
      E = skipImplicit(Var->getInit());
      continue;
    }
    Found.Unknown = !isa<CXXConstructExpr>(E) && !isa<InitListExpr>(E);
    return Found;
  }
  return Found;
}

void DDPObjects::evaluateOptions(Construction &C, const Expr *Options) {
  // Of a renamed setter's spellings the newer wins, as in PyTorch 2.13.
  OptionSetter Broadcast;
  for (StringRef Setter : C.Rule->Broadcast.setters()) {
    Broadcast = findOptionSetter(C, Options, Setter);
    if (Broadcast.Argument || Broadcast.Unknown)
      break;
  }
  C.OptionsVar = Broadcast.Variable;
  if (Broadcast.Argument) {
    C.Setting = Broadcast.Argument;
    C.Broadcast = stateOf(evaluateBool(C.Setting));
  } else {
    C.Broadcast =
        Broadcast.Unknown ? BroadcastState::Unknown : BroadcastState::Default;
  }
  const OncePerBackwardSetting &Policy = C.Rule->OncePerBackward;
  if (Policy.available() && C.Expr)
    C.OncePerBackward = isEnumerator(
        findOptionSetter(C, Options, Policy.Setter).Argument, Policy.Value);
}

bool DDPObjects::isEnumerator(const Expr *E, StringRef Qualified) {
  if (!E || E->isValueDependent())
    return false;
  const auto *Enum = E->IgnoreImplicit()->getType()->getAs<EnumType>();
  Expr::EvalResult Value;
  if (!Enum || !E->EvaluateAsInt(Value, Context))
    return false;
  for (const EnumConstantDecl *Constant : Enum->getDecl()->enumerators())
    if (llvm::APSInt::isSameValue(Constant->getInitVal(), Value.Val.getInt()))
      return Constant->getQualifiedNameAsString() == Qualified.ltrim(':');
  return false;
}

void DDPObjects::evaluateBroadcast(Construction &C) {
  const BroadcastSetting &Setting = C.Rule->Broadcast;
  if (!C.Expr) {
    C.Broadcast = BroadcastState::Unknown;
    return;
  }
  auto Argument = [&]() -> const Expr * {
    if (Setting.Argument < C.Args.size() &&
        !isa<CXXDefaultArgExpr>(C.Args[Setting.Argument]))
      return C.Args[Setting.Argument];
    return nullptr;
  };
  switch (Setting.SettingKind) {
  case BroadcastSetting::Kind::OptionBuilder:
    C.Options = Argument();
    if (C.Options)
      evaluateOptions(C, C.Options);
    else
      C.Broadcast = BroadcastState::Default;
    return;
  case BroadcastSetting::Kind::ConstructorArgument:
    if ((C.Setting = Argument())) {
      C.Broadcast = stateOf(evaluateBool(C.Setting));
    } else {
      C.Broadcast = BroadcastState::Default;
    }
    return;
  case BroadcastSetting::Kind::Field: {
    C.Broadcast = BroadcastState::Default;
    forEachStmt(settingScope(C.Object), [&](const Stmt *S) {
      const Expr *Target = nullptr;
      const Expr *Value = assignedValue(S, Target);
      const auto *Member =
          Value ? dyn_cast<MemberExpr>(skipImplicit(Target)) : nullptr;
      if (!Member || !Member->getMemberDecl()->getIdentifier() ||
          Member->getMemberDecl()->getName() != Setting.FieldName ||
          objectOf(Member->getBase()) != C.Object)
        return;
      C.Setting = Value;
      C.Broadcast = stateOf(evaluateBool(Value));
    });
    return;
  }
  }
}

QualType DDPObjects::moduleType(const Construction &C) const {
  if (!C.Rule)
    return QualType();
  const WrapperRule &Rule = *C.Rule;
  // A holder's rule describes its module class.
  const CXXRecordDecl *Wrapper =
      pointee(C.Object->getType())->getAsCXXRecordDecl();
  if (const CXXRecordDecl *Held = heldModule(Wrapper))
    Wrapper = Held;
  if (Rule.ModuleTemplateArgument) {
    const auto *Spec =
        dyn_cast_or_null<ClassTemplateSpecializationDecl>(Wrapper);
    if (Spec && *Rule.ModuleTemplateArgument < Spec->getTemplateArgs().size() &&
        Spec->getTemplateArgs()[*Rule.ModuleTemplateArgument].getKind() ==
            TemplateArgument::Type)
      return Spec->getTemplateArgs()[*Rule.ModuleTemplateArgument].getAsType();
  } else if (Rule.ModuleConstructorArgument) {
    if (*Rule.ModuleConstructorArgument < C.Args.size())
      return C.Args[*Rule.ModuleConstructorArgument]->getType();
  } else if (Wrapper) {
    if (Wrapper->hasDefinition())
      for (const FieldDecl *Field : Wrapper->getDefinition()->fields())
        if (Field->getIdentifier() && Field->getName() == Rule.ModuleField)
          return Field->getType();
  }
  return QualType();
}

bool DDPObjects::moduleHasBuffers(Construction &C) {
  if (AssumeModulesHaveBuffers)
    return true;
  QualType Module = moduleType(C);
  SavedBuffersVerdict Verdict = Saved.forModule(Module);
  if (Verdict.K == SavedBuffersVerdict::Kind::Assumed) {
    C.BuffersAssumption = Verdict.Reason;
    C.BuffersAssumedAt = Verdict.Loc;
    // A note in a system header (LibTorch's) would not be shown.
    if (Verdict.Loc.isInvalid() ||
        Context.getSourceManager().isInSystemHeader(Verdict.Loc))
      C.BuffersAssumedAt =
          C.Expr ? C.Expr->getBeginLoc() : C.Object->getLocation();
  }
  return Verdict.saves();
}

const Construction &DDPObjects::construction(const ValueDecl *Object) {
  if (const Construction *Known = Constructions.lookup(Object))
    return *Known;
  OwnedConstructions.push_back(std::make_unique<Construction>());
  Construction &C = *OwnedConstructions.back();
  Constructions[Object] = &C;
  C.Object = Object;
  C.Rule = ruleFor(Object->getType());
  if (!C.Rule)
    return C;
  findConstructionExpr(C);
  // A field is set on each object the factory made, where it is declared.
  if (C.FactoryCall &&
      C.Rule->Broadcast.SettingKind != BroadcastSetting::Kind::Field) {
    auto [Made, First] = FactoryMade.try_emplace(C.Expr, &C);
    if (!First) {
      FactoryCalls[Object] = C.FactoryCall;
      Constructions[Object] = Made->second;
      return *Made->second;
    }
  }
  if (C.FactoryCall)
    FactoryCalls[Object] = C.FactoryCall;
  evaluateBroadcast(C);
  C.HasBuffers = moduleHasBuffers(C);
  if (const auto *Param = dyn_cast<ParmVarDecl>(Object))
    joinCallers(C, *Param);
  return C;
}

const CallExpr *DDPObjects::factoryCall(const ValueDecl *Object) {
  construction(Object);
  return FactoryCalls.lookup(Object);
}

void DDPObjects::joinCallers(Construction &C, const ParmVarDecl &Param) {
  if (!Callers)
    Callers = std::make_unique<CallerIndex>(Context, *this);
  C.Callers = Callers->resolve(Param);
  if (!C.Callers.Complete)
    return;
  // The parameter broadcasts if any caller's object does.
  bool Unknown = false, Broadcasts = false, HasBuffers = false;
  for (const CallerSource &Source : C.Callers.Sources) {
    Unknown |= Source.From->Broadcast == BroadcastState::Unknown;
    Broadcasts |= Source.From->broadcasts();
    HasBuffers |= Source.From->HasBuffers;
  }
  C.Broadcast = Unknown      ? BroadcastState::Unknown
                : Broadcasts ? BroadcastState::SetTrue
                             : BroadcastState::SetFalse;
  C.HasBuffers = HasBuffers;
  // Once per backward only if every caller's object that broadcasts is.
  C.OncePerBackward =
      llvm::all_of(C.Callers.Sources, [](const CallerSource &Source) {
        return !Source.From->broadcasts() || Source.From->OncePerBackward;
      });
}

const Construction *DDPObjects::temporaryConstruction(const Expr *E,
                                                      const ParmVarDecl *Param) {
  auto [It, Inserted] = Temporaries.try_emplace(E);
  if (!Inserted)
    return It->second.get();
  auto C = std::make_unique<Construction>();
  C->Object = Param;
  C->Rule = ruleFor(skipImplicit(E)->getType());
  if (!C->Rule || !(C->Expr = constructingExpr(E, C->Args, &C->FactoryCall)))
    return nullptr;
  evaluateBroadcast(*C);
  C->HasBuffers = moduleHasBuffers(*C);
  It = Temporaries.find(E);
  It->second = std::move(C);
  return It->second.get();
}

} // namespace clangfe
} // namespace ddpguard
