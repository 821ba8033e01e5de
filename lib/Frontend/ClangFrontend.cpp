//===- ClangFrontend.cpp --------------------------------------------------===//

#include "ClangFrontend.h"
#include "SavedBuffers.h"
#include "SavedOperands.h"
#include "Torch/InPlace.h"
#include "clang/AST/DeclCXX.h"
#include "clang/AST/ExprCXX.h"
#include "clang/Analysis/CFG.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSwitch.h"

using namespace clang;
using namespace ddpguard::model;

namespace ddpguard {
namespace clangfe {

const FunctionDecl *visibleCallee(const CallExpr *Call,
                                  const SourceManager &SM) {
  const FunctionDecl *Callee = Call->getDirectCallee();
  if (!Callee)
    return nullptr;
  const FunctionDecl *Definition = nullptr;
  if (!Callee->hasBody(Definition) || !Definition ||
      isLibraryDecl(Definition))
    return nullptr;
  return Definition;
}

llvm::SmallVector<const CXXMethodDecl *, 1> callOperators(const Expr *Argument,
                                                          bool &Inline) {
  llvm::SmallVector<const CXXMethodDecl *, 1> Operators;
  const Expr *E = skipImplicit(Argument);
  Inline = isa_and_nonnull<LambdaExpr>(E);
  if (const auto *Ref = dyn_cast_or_null<DeclRefExpr>(E))
    if (const auto *Var = dyn_cast<VarDecl>(Ref->getDecl()))
      if (!isa<ParmVarDecl>(Var) && Var->getInit())
        E = skipImplicit(Var->getInit());
  const auto *Lambda = dyn_cast_or_null<LambdaExpr>(E);
  if (!Lambda)
    return Operators;
  const CXXRecordDecl *Closure = Lambda->getLambdaClass();
  if (!Closure->isGenericLambda()) {
    Operators.push_back(Closure->getLambdaCallOperator());
    return Operators;
  }
  if (const FunctionTemplateDecl *Template =
          Closure->getDependentLambdaCallOperator())
    for (const FunctionDecl *Spec : Template->specializations())
      Operators.push_back(cast<CXXMethodDecl>(Spec));
  return Operators;
}

namespace {

bool isInPlaceMutator(StringRef Name) {
  return llvm::StringSwitch<bool>(Name)
      .Cases("push_back", "emplace_back", "push_front", "emplace_front", true)
      .Cases("insert", "emplace", "append", "assign", "extend", true)
      .Default(torch::isInPlaceOp(Name));
}

/// Calls whose result carries no autograd history of their object.
bool cutsHistory(StringRef Name) {
  return llvm::StringSwitch<bool>(Name)
      .Cases("detach", "item", "numel", "size", "sizes", "dim", true)
      .Cases("defined", "requires_grad", "dtype", "device", true)
      .Default(false);
}

std::optional<bool> guardMode(const VarDecl *Var, ASTContext &Context) {
  const CXXRecordDecl *Record = Var->getType()->getAsCXXRecordDecl();
  if (!Record)
    return std::nullopt;
  std::string Name = qualifiedName(Record);
  const auto *Construct =
      dyn_cast_or_null<CXXConstructExpr>(skipImplicit(Var->getInit()));
  auto Argument = [&](bool Default) {
    bool Value = Default;
    if (Construct && Construct->getNumArgs() > 0 &&
        !isa<CXXDefaultArgExpr>(Construct->getArg(0)))
      Construct->getArg(0)->EvaluateAsBooleanCondition(Value, Context);
    return Value;
  };
  if (Name == "c10::NoGradGuard" || Name == "at::NoGradGuard")
    return false;
  if (Name == "c10::AutoGradMode" || Name == "at::AutoGradMode")
    return Argument(true);
  if (Name == "c10::InferenceMode")
    return !Argument(true);
  return std::nullopt;
}

/// `GradMode::set_enabled(b)` as a statement.
std::optional<bool> setEnabledCall(const Stmt *S, ASTContext &Context) {
  const auto *Call = dyn_cast<CallExpr>(S);
  const FunctionDecl *Callee = Call ? Call->getDirectCallee() : nullptr;
  if (!Callee || Call->getNumArgs() != 1 ||
      Callee->getQualifiedNameAsString() != "c10::GradMode::set_enabled")
    return std::nullopt;
  bool Value;
  if (Call->getArg(0)->EvaluateAsBooleanCondition(Value, Context))
    return Value;
  return std::nullopt;
}

class Translator {
public:
  Translator(const FunctionDecl *Function, DDPObjects &Objects,
             SummaryProvider &Summaries, ModuleCalls *Modules,
             bool ValueWrites, bool SilentWrites)
      : Objects(Objects), Summaries(Summaries), Modules(Modules),
        ValueWrites(ValueWrites), SilentWrites(SilentWrites),
        Context(Objects.context()),
        SM(Context.getSourceManager()) {
    Result.Function = Function;
  }

  TranslatedFunction run();

private:
  void computeGradModes(const Stmt *S, bool GradEnabled);
  bool gradEnabledAt(const Stmt *S) const {
    auto It = GradEnabled.find(S);
    return It == GradEnabled.end() || It->second;
  }
  ValueId valueOf(const ValueDecl *Decl);
  ValueId exprValue(const Expr *E);
  ObjectId objectId(const ValueDecl *Decl);
  /// The parameters of the module (or DDP object) Decl holds.
  TensorSetId parametersOf(const ValueDecl *Decl);
  /// With Modules: a forward of a plain module, or a step that writes.
  bool handleModuleCall(const Stmt *S, unsigned Block);
  /// With ValueWrites: the value whose storage E's tensor shares (a
  /// variable, an op's result, or a view of one), if it is known.
  std::optional<ValueId> storageSource(const Expr *E);
  TensorSetId newStorage();
  /// A value made from Init (by a declaration or an assignment) has Init's
  /// storage or a new one.
  void setStorageFrom(Event &E, const Expr *Init);
  /// An operation that saves a tensor for backward (SavedOperands.def).
  std::optional<TorchOpCall> savingOp(const Stmt *S);
  bool handleSavingOp(const CallExpr *Call, unsigned Block);
  /// An in-place write on a value that is not a parameter.
  void handleValueWrite(const CallExpr *Call, unsigned Block);
  /// A write through `x.data()` on a module's parameters or on a value.
  void handleDataWrite(const CallExpr *Call, unsigned Block);
  SiteId addSite(Site S);
  void collectLeaves(const Expr *E, llvm::SmallVectorImpl<ValueId> &Out);
  llvm::SmallVector<ValueId, 4> leaves(llvm::ArrayRef<const Expr *> Exprs);
  /// The value an assignment to E writes, and whether it replaces it.
  std::optional<std::pair<ValueId, bool>> target(const Expr *E);

  void reserveCallValue(const Stmt *S);
  void handle(const Stmt *S, unsigned Block);
  bool handleBackward(const CallExpr *Call, unsigned Block);
  bool handleSummarisedCall(const CallExpr *Call, unsigned Block);
  bool handleCallableArguments(const CallExpr *Call, unsigned Block);
  /// applySummary for a call that runs Callee once, its parameters bound to
  /// the call's arguments from FirstArgument on; returns what it hands back.
  llvm::SmallVector<ValueId, 4>
  applyCallSummary(const CallExpr *Call, const FunctionDecl *Callee,
                   const Summary &Sum, unsigned FirstArgument, unsigned Block);
  /// Appends the events of a call of Callee that Sum summarises. Argument
  /// maps a parameter to the expression bound to it; when it gives none, all
  /// of ArgLeaves stand for that parameter (a library algorithm's elements).
  /// Returns the values the call's result (or what it stores) derives from.
  llvm::SmallVector<ValueId, 4>
  applySummary(const CallExpr *Call, const FunctionDecl *Callee,
               const Summary &Sum,
               llvm::function_ref<const Expr *(unsigned)> Argument,
               llvm::ArrayRef<ValueId> ArgLeaves, bool Algorithm, bool AtInner,
               unsigned Block);
  void handleMutation(const CallExpr *Call, unsigned Block);
  bool isOutOfSight(const CallExpr *Call);
  /// The escaped pool, read where Call may hand it back.
  ValueId readEscaped(const Expr *Call);
  /// The value standing for everything that escaped into code we cannot see.
  ValueId escaped();
  void escape(const Expr *Through, llvm::ArrayRef<ValueId> Sources,
              unsigned Block);
  /// Appends Target = Sources; with Init, a strong derivation gives Target
  /// Init's storage (ValueWrites).
  void derive(unsigned Block, const Expr *Target,
              llvm::ArrayRef<ValueId> Sources, bool Strong,
              const Expr *Init = nullptr);
  void computeOrder(const CFG &Cfg);
  unsigned eventsIn(unsigned Block) const {
    return Result.Graph.blocks()[Block].Events.size();
  }

  DDPObjects &Objects;
  SummaryProvider &Summaries;
  ModuleCalls *Modules;
  bool ValueWrites;
  bool SilentWrites;
  ASTContext &Context;
  const SourceManager &SM;
  TranslatedFunction Result;
  std::optional<ValueId> Escaped;
  llvm::DenseSet<ValueId> EscapingValues;
  llvm::DenseMap<const Stmt *, bool> GradEnabled;
  llvm::DenseMap<const ValueDecl *, ValueId> DeclValues;
  llvm::DenseMap<const Expr *, ValueId> ExprValues;
  llvm::DenseMap<const ValueDecl *, ObjectId> ObjectIds;
  llvm::DenseMap<const ValueDecl *, TensorSetId> ParameterSets;
  bool HasErrors = false;
  /// The block whose statement is being handled.
  unsigned CurrentBlock = 0;
};

void Translator::computeGradModes(const Stmt *S, bool Enabled) {
  if (!S || isa<LambdaExpr>(S))
    return;
  if (const auto *E = dyn_cast<Expr>(S))
    if (E->containsErrors())
      HasErrors = true;
  if (const auto *Compound = dyn_cast<CompoundStmt>(S)) {
    for (const Stmt *Child : Compound->body()) {
      computeGradModes(Child, Enabled);
      if (const auto *Decl = dyn_cast<DeclStmt>(Child)) {
        for (const clang::Decl *D : Decl->decls())
          if (const auto *Var = dyn_cast<VarDecl>(D))
            if (std::optional<bool> Mode = guardMode(Var, Context))
              Enabled = *Mode;
      } else if (const auto *E = dyn_cast<Expr>(Child)) {
        if (std::optional<bool> Mode = setEnabledCall(E->IgnoreImplicit(), Context))
          Enabled = *Mode;
      }
    }
    return;
  }
  if (isa<CallExpr>(S))
    GradEnabled[S] = Enabled;
  for (const Stmt *Child : S->children())
    computeGradModes(Child, Enabled);
}

ValueId Translator::valueOf(const ValueDecl *Decl) {
  if (const auto *Binding = dyn_cast<BindingDecl>(Decl))
    if (const ValueDecl *Decomposed = Binding->getDecomposedDecl())
      Decl = Decomposed;
  auto [It, Inserted] = DeclValues.try_emplace(Decl, 0);
  if (Inserted) {
    // Members and globals outlive the call, and may hold what escaped
    // before it.
    const auto *Var = dyn_cast<VarDecl>(Decl);
    if (isa<FieldDecl>(Decl) || (Var && Var->hasGlobalStorage())) {
      escaped();
      ValueId V = Result.Graph.addInputValueOf(Result.EscapedOrigin);
      Result.Graph.markEscaping(V);
      EscapingValues.insert(V);
      if (ValueWrites && isTensor(Decl->getType()))
        Result.Graph.setInputStorage(V, newStorage());
      It->second = V;
      return V;
    }
    It->second = Result.Graph.addValue();
  }
  return It->second;
}

ValueId Translator::exprValue(const Expr *E) {
  auto [It, Inserted] = ExprValues.try_emplace(E, 0);
  if (Inserted)
    It->second = Result.Graph.addValue();
  return It->second;
}

ObjectId Translator::objectId(const ValueDecl *Decl) {
  auto [It, Inserted] = ObjectIds.try_emplace(Decl, 0);
  if (Inserted) {
    ObjectInfo Info{Decl->getNameAsString(), /*BroadcastsBuffers=*/false,
                    /*HasBuffers=*/false};
    if (Objects.ruleFor(Decl->getType())) {
      const Construction &C = Objects.construction(Decl);
      Info = {Info.Name, C.broadcasts(), C.HasBuffers, C.OncePerBackward};
    }
    It->second = Result.Graph.addObject(Info);
    Result.Objects.push_back(Decl);
  }
  return It->second;
}

TensorSetId Translator::parametersOf(const ValueDecl *Decl) {
  auto [It, Inserted] = ParameterSets.try_emplace(Decl, 0);
  if (Inserted) {
    It->second = Result.Graph.addTensorSet(
        {TensorSetInfo::Kind::Parameters, Decl->getNameAsString()});
    Result.ParameterSetModules.push_back({It->second, Decl});
  }
  return It->second;
}

SiteId Translator::addSite(Site S) {
  Result.Sites.push_back(S);
  return Result.Sites.size() - 1;
}

void Translator::collectLeaves(const Expr *E,
                               llvm::SmallVectorImpl<ValueId> &Out) {
  if (!E)
    return;
  auto Known = ExprValues.find(E);
  if (Known != ExprValues.end()) {
    Out.push_back(Known->second);
    return;
  }
  if (isa<LambdaExpr>(E))
    return;
  if (const auto *Ref = dyn_cast<DeclRefExpr>(E)) {
    if (isa<VarDecl>(Ref->getDecl()) || isa<BindingDecl>(Ref->getDecl()))
      Out.push_back(valueOf(Ref->getDecl()));
    return;
  }
  if (const auto *Member = dyn_cast<MemberExpr>(E)) {
    if (isa<CXXThisExpr>(Member->getBase()->IgnoreImpCasts()) &&
        isa<FieldDecl>(Member->getMemberDecl())) {
      Out.push_back(valueOf(Member->getMemberDecl()));
      return;
    }
  }
  if (const auto *Call = dyn_cast<CXXMemberCallExpr>(E))
    if (const CXXMethodDecl *Method = Call->getMethodDecl())
      if (Method->getIdentifier() && cutsHistory(Method->getName()))
        return;
  // A user function we cannot see hands back its arguments' history (below)
  // and what escaped before it: into such calls, members and globals. A
  // number carries no history.
  if (const auto *Call = dyn_cast<CallExpr>(E))
    if (isOutOfSight(Call)) {
      QualType Returned = Call->getDirectCallee()->getReturnType();
      if (!Returned->isVoidType() && !Returned->isArithmeticType() &&
          !Returned->isEnumeralType())
        Out.push_back(readEscaped(Call));
    }
  for (const Stmt *Child : E->children())
    if (const auto *ChildExpr = dyn_cast_or_null<Expr>(Child))
      collectLeaves(ChildExpr, Out);
}

llvm::SmallVector<ValueId, 4>
Translator::leaves(llvm::ArrayRef<const Expr *> Exprs) {
  llvm::SmallVector<ValueId, 4> Out;
  for (const Expr *E : Exprs)
    collectLeaves(E, Out);
  return Out;
}

std::optional<std::pair<ValueId, bool>> Translator::target(const Expr *E) {
  E = skipImplicit(E);
  if (!E)
    return std::nullopt;
  if (const auto *Ref = dyn_cast<DeclRefExpr>(E)) {
    if (isa<VarDecl>(Ref->getDecl()) || isa<BindingDecl>(Ref->getDecl()))
      return std::make_pair(valueOf(Ref->getDecl()),
                            !Ref->getDecl()->getType()->isReferenceType());
    return std::nullopt;
  }
  if (const auto *Member = dyn_cast<MemberExpr>(E)) {
    if (isa<CXXThisExpr>(Member->getBase()->IgnoreImpCasts()) &&
        isa<FieldDecl>(Member->getMemberDecl()))
      return std::make_pair(valueOf(Member->getMemberDecl()), true);
    if (auto Base = target(Member->getBase()))
      return std::make_pair(Base->first, false);
    return std::nullopt;
  }
  const Expr *Base = nullptr;
  if (const auto *Subscript = dyn_cast<ArraySubscriptExpr>(E))
    Base = Subscript->getBase();
  else if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(E))
    Base = Op->getNumArgs() > 0 ? Op->getArg(0) : nullptr;
  else if (const auto *Unary = dyn_cast<UnaryOperator>(E))
    Base = Unary->getSubExpr();
  else if (const auto *Call = dyn_cast<CXXMemberCallExpr>(E))
    Base = Call->getImplicitObjectArgument();
  if (Base)
    if (auto Outer = target(Base))
      return std::make_pair(Outer->first, false);
  return std::nullopt;
}

void Translator::derive(unsigned Block, const Expr *Target,
                        llvm::ArrayRef<ValueId> Sources, bool Strong,
                        const Expr *Init) {
  auto T = target(Target);
  if (!T)
    return;
  Event E = Event::derive(T->first, Sources, Strong && T->second);
  if (Init && E.Strong)
    setStorageFrom(E, Init);
  Result.Graph.append(Block, std::move(E));
  if (EscapingValues.contains(T->first))
    escape(Target, Sources, Block);
}

bool Translator::isOutOfSight(const CallExpr *Call) {
  const FunctionDecl *Callee = Call->getDirectCallee();
  if (!Callee || isLibraryDecl(Callee))
    return false;
  // A visible helper that neither forwards nor backwards has no summary: it
  // counts as a whole, as out of sight when something in it is.
  if (const FunctionDecl *Visible = visibleCallee(Call, SM))
    return !Summaries.summaryFor(Visible) &&
           Summaries.reachesOutOfSight(Visible);
  const FunctionDecl *Definition = nullptr;
  return !Callee->hasBody(Definition);
}

ValueId Translator::escaped() {
  if (!Escaped) {
    Escaped = Result.Graph.addInputValue(Result.EscapedOrigin);
    Result.Graph.markEscaping(*Escaped);
    Result.EscapedPool = Escaped;
  }
  return *Escaped;
}

ValueId Translator::readEscaped(const Expr *Call) {
  if (llvm::none_of(Result.EscapedReads,
                    [&](const EscapePoint &P) { return P.At == Call; }))
    Result.EscapedReads.push_back({Call, CurrentBlock, eventsIn(CurrentBlock)});
  return escaped();
}

void Translator::escape(const Expr *Through, llvm::ArrayRef<ValueId> Sources,
                        unsigned Block) {
  if (Sources.empty())
    return;
  Result.Escapes.push_back({Through, Block, eventsIn(Block)});
  Result.Graph.append(Block,
                      Event::derive(escaped(), Sources, /*Strong=*/false));
}

bool Translator::handleBackward(const CallExpr *Call, unsigned Block) {
  const FunctionDecl *Callee = Call->getDirectCallee();
  if (!Callee || !Callee->getIdentifier())
    return false;
  auto IsTrue = [&](unsigned Index) {
    bool Value = false;
    return Index < Call->getNumArgs() &&
           !isa<CXXDefaultArgExpr>(Call->getArg(Index)) &&
           skipImplicit(Call->getArg(Index))
               ->EvaluateAsBooleanCondition(Value, Context) &&
           Value;
  };
  const Expr *Roots = nullptr;
  // retain_graph defaults to create_graph.
  bool Retain = false, Create = false, Grad = false;
  if (const auto *Member = dyn_cast<CXXMemberCallExpr>(Call)) {
    const CXXRecordDecl *Record = Member->getRecordDecl();
    if (Callee->getName() != "backward" || !Record ||
        !StringRef(qualifiedName(Record)).ends_with("Tensor"))
      return false;
    Roots = Member->getImplicitObjectArgument();
    Create = IsTrue(2);
    Retain = IsTrue(1) || Create;
  } else {
    std::string Name = Callee->getQualifiedNameAsString();
    if (Name == "torch::autograd::backward") {
      Create = IsTrue(3);
      Retain = IsTrue(2) || Create;
    } else if (Name == "torch::autograd::grad") {
      Grad = true;
      Create = IsTrue(4);
      Retain = IsTrue(3) || Create;
    } else {
      return false;
    }
    if (Call->getNumArgs() == 0)
      return false;
    Roots = Call->getArg(0);
  }
  SiteId Site = addSite({Call});
  llvm::SmallVector<ValueId, 4> RootValues = leaves({Roots});
  Result.Graph.append(Block, Grad ? Event::grad(Site, RootValues, Retain,
                                                Create, exprValue(Call))
                                  : Event::backward(Site, RootValues, Retain,
                                                    Create));
  return true;
}

bool Translator::handleSummarisedCall(const CallExpr *Call, unsigned Block) {
  const FunctionDecl *Callee = visibleCallee(Call, SM);
  const Summary *Sum = Callee ? Summaries.summaryFor(Callee) : nullptr;
  if (!Sum)
    return false;
  // A call operator invoked as an operator call has the object as argument 0.
  unsigned Offset =
      isa<CXXOperatorCallExpr>(Call) && isa<CXXMethodDecl>(Callee) ? 1 : 0;
  Result.Graph.append(Block,
                      Event::derive(exprValue(Call),
                                    applyCallSummary(Call, Callee, *Sum,
                                                     Offset, Block),
                                    /*Strong=*/true));
  return true;
}

llvm::SmallVector<ValueId, 4>
Translator::applyCallSummary(const CallExpr *Call, const FunctionDecl *Callee,
                             const Summary &Sum, unsigned FirstArgument,
                             unsigned Block) {
  auto Argument = [&](unsigned Parameter) -> const Expr * {
    return Parameter + FirstArgument < Call->getNumArgs()
               ? Call->getArg(Parameter + FirstArgument)
               : nullptr;
  };
  llvm::SmallVector<const Expr *, 4> Args(
      Call->arg_begin() + std::min(FirstArgument, Call->getNumArgs()),
      Call->arg_end());
  return applySummary(Call, Callee, Sum, Argument, leaves(Args),
                      /*Algorithm=*/false, /*AtInner=*/false, Block);
}

llvm::SmallVector<ValueId, 4> Translator::applySummary(
    const CallExpr *Call, const FunctionDecl *Callee, const Summary &Sum,
    llvm::function_ref<const Expr *(unsigned)> Argument,
    llvm::ArrayRef<ValueId> ArgLeaves, bool Algorithm, bool AtInner,
    unsigned Block) {
  auto ParameterLeaves = [&](unsigned Parameter,
                             llvm::SmallVectorImpl<ValueId> &Out) {
    if (const Expr *Arg = Argument(Parameter))
      collectLeaves(Arg, Out);
    else
      Out.append(ArgLeaves.begin(), ArgLeaves.end());
  };
  bool CallerGrad = gradEnabledAt(Call);
  llvm::SmallVector<ValueId, 4> Returned(ArgLeaves);
  for (const VarDecl *Var : Sum.ReturnedCaptures)
    Returned.push_back(valueOf(Var));
  // An algorithm may run the lambda once per element: two runs of all its
  // events stand for any number. A helper repeats the forwards it runs in a
  // loop.
  for (unsigned Run = 0; Run < (Algorithm ? 2 : 1); ++Run) {
    std::vector<ValueId> Outputs(Sum.Effects.size());
    for (unsigned I = 0; I < Sum.Effects.size(); ++I) {
      const Summary::Effect &Effect = Sum.Effects[I];
      Site S{Call, Callee, Effect.Loc, Effect.Repeats || Algorithm};
      S.AtInner = AtInner;
      if (!Effect.IsForward) {
        llvm::SmallVector<ValueId, 4> Roots;
        for (unsigned Parameter : Effect.ParameterRoots)
          ParameterLeaves(Parameter, Roots);
        for (const VarDecl *Var : Effect.CaptureRoots)
          Roots.push_back(valueOf(Var));
        for (unsigned Forward : Effect.ForwardRoots)
          Roots.push_back(Outputs[Forward]);
        if (Effect.ThroughUnknown)
          Roots.push_back(Result.Graph.unknownValue());
        if (Effect.ThroughEscaped)
          Roots.push_back(readEscaped(Call));
        Result.Graph.append(Block, Event::backward(addSite(S), Roots,
                                                   Effect.RetainGraph));
        continue;
      }
      const ValueDecl *Object = Effect.Object;
      if (Effect.Kind == Summary::ObjectKind::Parameter)
        Object = Argument(Effect.Parameter)
                     ? Objects.objectOf(Argument(Effect.Parameter))
                     : nullptr;
      if (!Object || !Objects.ruleFor(Object->getType()))
        continue;
      Outputs[I] = Result.Graph.addValue();
      for (int Times = Effect.Repeats && !Algorithm ? 2 : 1; Times > 0; --Times)
        Result.Graph.append(
            Block, Event::forward(addSite(S), objectId(Object),
                                  CallerGrad && Effect.GradEnabled, Outputs[I],
                                  ArgLeaves));
      if (Effect.Returned)
        Returned.push_back(Outputs[I]);
    }
    for (auto [Parameter, Forward] : Sum.StoredOutputs) {
      if (const Expr *Arg = Argument(Parameter))
        derive(Block, Arg, {Outputs[Forward]}, /*Strong=*/false);
      else
        Returned.push_back(Outputs[Forward]);
    }
    for (auto [Var, Forward] : Sum.StoredCaptures)
      Result.Graph.append(Block, Event::derive(valueOf(Var), {Outputs[Forward]},
                                               /*Strong=*/false));
    for (unsigned Forward : Sum.EscapedForwards)
      escape(Call, {Outputs[Forward]}, Block);
  }
  for (unsigned Parameter : Sum.EscapedParameters) {
    llvm::SmallVector<ValueId, 4> Leaves;
    ParameterLeaves(Parameter, Leaves);
    escape(Call, Leaves, Block);
  }
  if (Sum.ReturnsEscaped)
    Returned.push_back(readEscaped(Call));
  return Returned;
}

bool Translator::handleCallableArguments(const CallExpr *Call, unsigned Block) {
  // A library algorithm (std::transform, std::for_each, std::accumulate...)
  // runs the lambda on its elements: its body is not ours to read, but the
  // lambda's is. Calls whose body we see are summarised instead.
  const FunctionDecl *Callee = Call->getDirectCallee();
  if (!Callee || visibleCallee(Call, SM))
    return false;
  // `f(x)` on a std::function holding a lambda: one call of the lambda.
  if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(Call);
      Op && Op->getOperator() == OO_Call && Op->getNumArgs() > 0) {
    bool Inline = false;
    llvm::SmallVector<ValueId, 4> Results;
    for (const CXXMethodDecl *Operator : callOperators(Op->getArg(0), Inline))
      if (const Summary *Sum = Summaries.summaryFor(Operator))
        llvm::append_range(Results, applyCallSummary(Call, Operator, *Sum,
                                                     /*FirstArgument=*/1,
                                                     Block));
    if (Results.empty())
      return false;
    Result.Graph.append(Block, Event::derive(exprValue(Call), Results,
                                             /*Strong=*/true));
    return true;
  }
  struct Callable {
    const CXXMethodDecl *Operator;
    const Summary *Sum;
    bool Inline;
  };
  llvm::SmallVector<Callable, 1> Callables;
  llvm::SmallVector<const Expr *, 4> Others;
  for (const Expr *Arg : Call->arguments()) {
    bool Inline = false;
    llvm::SmallVector<const CXXMethodDecl *, 1> Operators =
        callOperators(Arg, Inline);
    if (Operators.empty()) {
      Others.push_back(Arg);
      continue;
    }
    for (const CXXMethodDecl *Operator : Operators)
      if (const Summary *Sum = Summaries.summaryFor(Operator))
        Callables.push_back({Operator, Sum, Inline});
  }
  if (Callables.empty())
    return false;
  llvm::SmallVector<ValueId, 4> ArgLeaves = leaves(Others);
  llvm::SmallVector<ValueId, 4> Results;
  for (const Callable &C : Callables) {
    llvm::SmallVector<ValueId, 4> Returned = applySummary(
        Call, C.Operator, *C.Sum,
        [](unsigned) -> const Expr * { return nullptr; }, ArgLeaves,
        /*Algorithm=*/true, /*AtInner=*/C.Inline, Block);
    Results.append(Returned.begin(), Returned.end());
  }
  // What the lambda returns lands in the algorithm's result or in a range
  // or container its arguments name (an output iterator, an accumulator).
  for (const Expr *Arg : Others)
    forEachStmt(Arg, [&](const Stmt *S) {
      if (const auto *Ref = dyn_cast<DeclRefExpr>(S))
        if (isa<VarDecl>(Ref->getDecl()))
          Result.Graph.append(Block, Event::derive(valueOf(Ref->getDecl()),
                                                   Results, /*Strong=*/false));
    });
  Result.Graph.append(Block,
                      Event::derive(exprValue(Call), Results, /*Strong=*/true));
  return true;
}

void Translator::handleMutation(const CallExpr *Call, unsigned Block) {
  if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(Call)) {
    OverloadedOperatorKind Kind = Op->getOperator();
    if (Kind == OO_Equal && Op->getNumArgs() == 2) {
      derive(Block, Op->getArg(0), leaves({Op->getArg(1)}), /*Strong=*/true,
             Op->getArg(1));
      return;
    }
    if ((Kind == OO_PlusEqual || Kind == OO_MinusEqual || Kind == OO_StarEqual ||
         Kind == OO_SlashEqual) &&
        Op->getNumArgs() == 2) {
      derive(Block, Op->getArg(0), leaves({Op->getArg(1)}), /*Strong=*/false);
      return;
    }
  }
  if (const auto *Member = dyn_cast<CXXMemberCallExpr>(Call)) {
    const CXXMethodDecl *Method = Member->getMethodDecl();
    if (Method && Method->getIdentifier() &&
        isInPlaceMutator(Method->getName())) {
      llvm::SmallVector<const Expr *, 4> Args(Member->arg_begin(),
                                              Member->arg_end());
      derive(Block, Member->getImplicitObjectArgument(), leaves(Args),
             /*Strong=*/false);
      return;
    }
  }
  // Arguments passed by non-const reference may receive any argument's history.
  const FunctionDecl *Callee = Call->getDirectCallee();
  if (!Callee)
    return;
  unsigned Offset =
      isa<CXXOperatorCallExpr>(Call) && isa<CXXMethodDecl>(Callee) ? 1 : 0;
  std::optional<llvm::SmallVector<ValueId, 4>> AllArgs;
  for (unsigned I = 0; I < Callee->getNumParams() && I + Offset < Call->getNumArgs();
       ++I) {
    QualType Type = Callee->getParamDecl(I)->getType();
    if (!Type->isLValueReferenceType() || Type.getNonReferenceType().isConstQualified())
      continue;
    if (!AllArgs) {
      llvm::SmallVector<const Expr *, 4> Args(Call->arg_begin() + Offset,
                                              Call->arg_end());
      AllArgs = leaves(Args);
    }
    derive(Block, Call->getArg(I + Offset), *AllArgs, /*Strong=*/false);
  }
}

std::optional<ValueId> Translator::storageSource(const Expr *E) {
  E = skipImplicit(E);
  if (!E)
    return std::nullopt;
  // A copy or move of a Tensor handle shares the storage.
  if (const auto *Construct = dyn_cast<CXXConstructExpr>(E))
    if (Construct->getNumArgs() == 1 && isTensor(Construct->getType()) &&
        isTensor(Construct->getArg(0)->getType()))
      return storageSource(Construct->getArg(0));
  if (auto Known = ExprValues.find(E); Known != ExprValues.end())
    return Known->second;
  if (const auto *Ref = dyn_cast<DeclRefExpr>(E))
    if (isa<VarDecl>(Ref->getDecl()))
      return valueOf(Ref->getDecl());
  if (const auto *Member = dyn_cast<MemberExpr>(E))
    if (isa<CXXThisExpr>(Member->getBase()->IgnoreImpCasts()) &&
        isa<FieldDecl>(Member->getMemberDecl()))
      return valueOf(Member->getMemberDecl());
  // Views and in-place operations hand back their first operand's storage.
  if (const auto *Call = dyn_cast<CallExpr>(E))
    if (std::optional<TorchOpCall> Op = matchTorchOp(Call))
      if (Op->Op && Op->Op->Result == SavedOpResult::View &&
          !Op->Operands.empty())
        return storageSource(Op->Operands[0]);
  return std::nullopt;
}

TensorSetId Translator::newStorage() {
  return Result.Graph.addTensorSet({TensorSetInfo::Kind::Tensors, ""});
}

void Translator::setStorageFrom(Event &E, const Expr *Init) {
  if (!ValueWrites || !isTensor(Init->getType()))
    return;
  if (std::optional<ValueId> Source = storageSource(Init))
    E.StorageOf = *Source;
  else
    E.NewStorage = newStorage();
}

std::optional<TorchOpCall> Translator::savingOp(const Stmt *S) {
  const auto *Call = dyn_cast<CallExpr>(S);
  if (!Call)
    return std::nullopt;
  std::optional<TorchOpCall> Op = matchTorchOp(Call);
  if (!Op || !Op->Op || Op->Op->Result != SavedOpResult::New ||
      Op->Op->Saves.empty())
    return std::nullopt;
  return Op;
}

bool Translator::handleSavingOp(const CallExpr *Call, unsigned Block) {
  std::optional<TorchOpCall> Op = savingOp(Call);
  if (!Op)
    return false;
  ValueId Output = exprValue(Call);
  Event E = Event::op(addSite({Call}), gradEnabledAt(Call), Output,
                      leaves(Op->Operands), newStorage());
  for (const SaveRule &Rule : saveRules(Op->Op->Saves)) {
    Save S;
    for (unsigned Trigger : Rule.Triggers)
      if (Trigger < Op->Operands.size())
        collectLeaves(Op->Operands[Trigger], S.IfRequiresGrad);
    // An operand without history never requires grad.
    if (S.IfRequiresGrad.empty())
      continue;
    if (!Rule.Operand)
      S.StorageOf = Output;
    else if (*Rule.Operand < Op->Operands.size())
      S.StorageOf = storageSource(Op->Operands[*Rule.Operand]);
    if (S.StorageOf)
      E.Saves.push_back(std::move(S));
  }
  Result.Graph.append(Block, std::move(E));
  return true;
}

void Translator::handleValueWrite(const CallExpr *Call, unsigned Block) {
  std::optional<TensorWrite> Write = matchTensorWrite(Call);
  if (!Write || (Modules && Modules->matchParameterWrite(Call)))
    return;
  std::optional<ValueId> Through = storageSource(Write->Tensor);
  if (!Through)
    return;
  SiteId Site = addSite({Call});
  Result.Graph.append(Block,
                      Event::write(Site, WriteKind::InPlace, {}, {*Through}));
  Result.ValueWrites.push_back({Site, std::move(*Write)});
}

void Translator::handleDataWrite(const CallExpr *Call, unsigned Block) {
  std::optional<ParameterWrite> Write = Modules->matchDataWrite(Call);
  if (!Write)
    return;
  std::optional<ValueId> Through;
  if (!Write->Module && !(Through = storageSource(Write->Tensor)))
    return;
  SiteId Site = addSite({Call});
  Result.Graph.append(
      Block, Write->Module
                 ? Event::write(Site, WriteKind::InPlace,
                                {parametersOf(Write->Module)}, {},
                                /*Silent=*/true)
                 : Event::write(Site, WriteKind::InPlace, {}, {*Through},
                                /*Silent=*/true));
  Result.DataWrites.push_back({Site, std::move(*Write)});
}

bool Translator::handleModuleCall(const Stmt *S, unsigned Block) {
  if (std::optional<ModuleForward> Forward = Modules->matchForward(S)) {
    llvm::SmallVector<ValueId, 4> Inputs = leaves(Forward->Args);
    Event E = Event::forward(addSite({Forward->Call}),
                             objectId(Forward->Module), gradEnabledAt(S),
                             exprValue(Forward->Call), Inputs);
    if (ValueWrites)
      E.NewStorage = newStorage();
    switch (Modules->savingOf(Forward->Module)) {
    case ParameterSaving::None:
      break;
    case ParameterSaving::IfInputsRequireGrad:
      // Inputs without any history require no grad: nothing is saved.
      if (!Inputs.empty())
        E.Saves.push_back(
            {parametersOf(Forward->Module), {Inputs.begin(), Inputs.end()}});
      break;
    case ParameterSaving::Always:
      E.Saves.push_back({parametersOf(Forward->Module), {}});
      break;
    }
    Result.Graph.append(Block, std::move(E));
    return true;
  }
  if (std::optional<StepCall> Step = Modules->matchStep(S)) {
    if ((Step->Opt->Writes || SilentWrites) && Step->Opt->Module) {
      SiteId Site = addSite({Step->Call});
      (Step->Opt->Writes ? Result.Steps : Result.SilentSteps)
          .push_back({Site, Step->Opt});
      Result.Graph.append(Block, Event::write(Site, WriteKind::Step,
                                              {parametersOf(Step->Opt->Module)},
                                              {}, !Step->Opt->Writes));
    }
    return true;
  }
  return false;
}

void Translator::reserveCallValue(const Stmt *S) {
  if (std::optional<ForwardCall> Forward = Objects.matchForward(S)) {
    if (Forward->Object)
      exprValue(Forward->Call);
    return;
  }
  if (Modules)
    if (std::optional<ModuleForward> Forward = Modules->matchForward(S)) {
      exprValue(Forward->Call);
      return;
    }
  if (ValueWrites)
    if (std::optional<TorchOpCall> Op = savingOp(S)) {
      exprValue(Op->Call);
      return;
    }
  if (const auto *Call = dyn_cast<CallExpr>(S)) {
    if (const FunctionDecl *Callee = visibleCallee(Call, SM)) {
      if (Summaries.summaryFor(Callee))
        exprValue(Call);
      return;
    }
    for (const Expr *Arg : Call->arguments()) {
      bool Inline = false;
      for (const CXXMethodDecl *Operator : callOperators(Arg, Inline))
        if (Summaries.summaryFor(Operator)) {
          exprValue(Call);
          return;
        }
    }
  }
}

void Translator::handle(const Stmt *S, unsigned Block) {
  CurrentBlock = Block;
  if (std::optional<ForwardCall> Forward = Objects.matchForward(S)) {
    if (!Forward->Object)
      return;
    llvm::SmallVector<ValueId, 4> Inputs = leaves(Forward->Args);
    Event E = Event::forward(addSite({Forward->Call}),
                             objectId(Forward->Object), gradEnabledAt(S),
                             exprValue(Forward->Call), Inputs);
    if (ValueWrites)
      E.NewStorage = newStorage();
    // The wrapped module's parameters, whatever it is.
    if (Modules)
      E.Saves.push_back({parametersOf(Forward->Object), {}});
    Result.Graph.append(Block, std::move(E));
    return;
  }
  if (Modules && handleModuleCall(S, Block))
    return;
  if (const auto *Call = dyn_cast<CallExpr>(S)) {
    if (Modules)
      if (std::optional<ParameterWrite> Write =
              Modules->matchParameterWrite(Call)) {
        SiteId Site = addSite({Call});
        Result.Graph.append(Block,
                            Event::write(Site, WriteKind::InPlace,
                                         {parametersOf(Write->Module)}));
        Result.ParameterWrites.push_back({Site, std::move(*Write)});
      }
    if (SilentWrites)
      handleDataWrite(Call, Block);
    if (ValueWrites) {
      handleValueWrite(Call, Block);
      if (handleSavingOp(Call, Block))
        return;
    }
    if (isOutOfSight(Call)) {
      // The callee may keep what it is given (a tensor is a handle).
      llvm::SmallVector<const Expr *, 4> Args(Call->arguments());
      if (const auto *Member = dyn_cast<CXXMemberCallExpr>(Call))
        Args.push_back(Member->getImplicitObjectArgument());
      escape(Call, leaves(Args), Block);
    }
    if (!handleBackward(Call, Block) && !handleSummarisedCall(Call, Block) &&
        !handleCallableArguments(Call, Block))
      handleMutation(Call, Block);
    return;
  }
  if (const auto *Decl = dyn_cast<DeclStmt>(S)) {
    for (const clang::Decl *D : Decl->decls())
      if (const auto *Var = dyn_cast<VarDecl>(D))
        if (const Expr *Init = Var->getInit()) {
          Event E = Event::derive(valueOf(Var), leaves({Init}), true);
          setStorageFrom(E, Init);
          Result.Graph.append(Block, std::move(E));
        }
    return;
  }
  if (const auto *Binary = dyn_cast<BinaryOperator>(S)) {
    if (Binary->isAssignmentOp())
      derive(Block, Binary->getLHS(), leaves({Binary->getRHS()}),
             Binary->getOpcode() == BO_Assign);
    return;
  }
  if (const auto *Return = dyn_cast<ReturnStmt>(S)) {
    const Expr *Value = Return->getRetValue();
    if (!Value)
      return;
    llvm::SmallVector<ValueId, 4> Returned = leaves({Value});
    SiteId Site = addSite({Value});
    Result.Graph.append(Block, Event::ret(Site, Returned));
    if (ValueWrites && isModuleForward(Result.Function)) {
      Result.Graph.append(Block,
                          Event::backward(Site, Returned, /*Retain=*/false));
      Result.ResultBackwards.push_back(Site);
    }
  }
}

void Translator::computeOrder(const CFG &Cfg) {
  unsigned N = Cfg.getNumBlockIDs();
  std::vector<unsigned> PostOrder;
  std::vector<char> State(N, 0);
  // Iterative DFS; State 1 = on stack, 2 = done.
  std::vector<std::pair<unsigned, unsigned>> Stack;
  auto Successors = [&](unsigned B) -> llvm::ArrayRef<unsigned> {
    return Result.Graph.blocks()[B].Successors;
  };
  Result.InLoop.assign(N, false);
  Stack.push_back({Result.Graph.entry(), 0});
  State[Result.Graph.entry()] = 1;
  while (!Stack.empty()) {
    auto &[B, Next] = Stack.back();
    if (Next < Successors(B).size()) {
      unsigned Succ = Successors(B)[Next++];
      if (State[Succ] == 0) {
        State[Succ] = 1;
        Stack.push_back({Succ, 0});
      }
      continue;
    }
    State[B] = 2;
    PostOrder.push_back(B);
    Stack.pop_back();
  }
  Result.Order.assign(PostOrder.rbegin(), PostOrder.rend());
  // A block is in a loop when its strongly connected component has a cycle:
  // Kosaraju's second pass over the reversed graph, in reverse post-order.
  std::vector<std::vector<unsigned>> Predecessors(N);
  for (unsigned B = 0; B < N; ++B)
    for (unsigned Succ : Successors(B))
      Predecessors[Succ].push_back(B);
  std::vector<int> Component(N, -1);
  int Components = 0;
  for (unsigned Root : Result.Order) {
    if (Component[Root] != -1)
      continue;
    std::vector<unsigned> Members, Work{Root};
    Component[Root] = Components;
    while (!Work.empty()) {
      unsigned X = Work.back();
      Work.pop_back();
      Members.push_back(X);
      for (unsigned Pred : Predecessors[X])
        if (Component[Pred] == -1 && State[Pred] == 2) {
          Component[Pred] = Components;
          Work.push_back(Pred);
        }
    }
    bool Cyclic = Members.size() > 1 || llvm::is_contained(Successors(Root), Root);
    for (unsigned X : Members)
      Result.InLoop[X] = Cyclic;
    ++Components;
  }
}

TranslatedFunction Translator::run() {
  const FunctionDecl *Function = Result.Function;
  const Stmt *Body = Function->getBody();
  if (!Body || Function->isDependentContext() || Function->isInvalidDecl()) {
    Result.Failed = true;
    return std::move(Result);
  }
  computeGradModes(Body, /*GradEnabled=*/true);
  if (HasErrors) {
    Result.Failed = true;
    return std::move(Result);
  }

  CFG::BuildOptions Build;
  Build.setAllAlwaysAdd();
  Build.AddImplicitDtors = false;
  std::unique_ptr<CFG> Cfg =
      CFG::buildCFG(Function, const_cast<Stmt *>(Body), &Context, Build);
  if (!Cfg) {
    Result.Failed = true;
    return std::move(Result);
  }

  for (const ParmVarDecl *Param : Function->parameters()) {
    OriginId Origin;
    ValueId Value = Result.Graph.addInputValue(Origin);
    DeclValues[Param] = Value;
    if (ValueWrites && isTensor(Param->getType()))
      Result.Graph.setInputStorage(Value, newStorage());
    Result.ParameterValues.push_back(Value);
    Result.ParameterOrigins.push_back(Origin);
  }
  // A lambda's captured variables are its caller's: inputs, like parameters.
  if (const auto *Method = dyn_cast<CXXMethodDecl>(Function))
    if (Method->getParent()->isLambda())
      for (const LambdaCapture &C : Method->getParent()->captures()) {
        if (!C.capturesVariable())
          continue;
        const auto *Var = dyn_cast<VarDecl>(C.getCapturedVar());
        if (!Var || Var->isInitCapture() || DeclValues.count(Var))
          continue;
        OriginId Origin;
        ValueId Value = Result.Graph.addInputValue(Origin);
        DeclValues[Var] = Value;
        Result.Captures.push_back(
            {Var, Value, Origin, C.getCaptureKind() == LCK_ByRef});
      }
  for (unsigned I = 0; I < Cfg->getNumBlockIDs(); ++I)
    Result.Graph.addBlock();
  Result.Graph.setEntry(Cfg->getEntry().getBlockID());
  for (const CFGBlock *Block : *Cfg) {
    unsigned Id = Block->getBlockID();
    for (const CFGBlock::AdjacentBlock &Succ : Block->succs())
      if (const CFGBlock *Reachable = Succ.getReachableBlock())
        Result.Graph.addEdge(Id, Reachable->getBlockID());
  }
  // Values of forward and helper calls exist before any block uses them, since
  // blocks are not visited in control-flow order.
  for (const CFGBlock *Block : *Cfg)
    for (const CFGElement &Element : *Block)
      if (std::optional<CFGStmt> S = Element.getAs<CFGStmt>())
        reserveCallValue(S->getStmt());
  // Events are appended in evaluation order within each block.
  for (const CFGBlock *Block : *Cfg)
    for (const CFGElement &Element : *Block)
      if (std::optional<CFGStmt> S = Element.getAs<CFGStmt>())
        handle(S->getStmt(), Block->getBlockID());
  computeOrder(*Cfg);
  return std::move(Result);
}

} // namespace

TranslatedFunction translateFunction(const FunctionDecl *Function,
                                     DDPObjects &Objects,
                                     SummaryProvider &Summaries,
                                     ModuleCalls *Modules, bool ValueWrites,
                                     bool SilentWrites) {
  return Translator(Function, Objects, Summaries, Modules, ValueWrites,
                    SilentWrites && Modules)
      .run();
}

bool isModuleForward(const FunctionDecl *Function) {
  const auto *Method = dyn_cast<CXXMethodDecl>(Function);
  return Method && Method->getIdentifier() && Method->getName() == "forward" &&
         isModuleRecord(Method->getParent());
}

} // namespace clangfe
} // namespace ddpguard
