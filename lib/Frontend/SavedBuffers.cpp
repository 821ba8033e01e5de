//===- SavedBuffers.cpp ---------------------------------------------------===//

#include "SavedBuffers.h"
#include "SavedOperands.h"
#include "Torch/InPlace.h"
#include "DDPObjects.h"
#include "clang/AST/DeclTemplate.h"
#include "clang/AST/ExprCXX.h"
#include "clang/Basic/OperatorKinds.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"
#include <optional>

using namespace clang;

namespace ddpguard {
namespace clangfe {

using Verdict = SavedBuffersVerdict;

namespace {

using Form = SavedOpForm;
using Result = SavedOpResult;

/// The abstract value of an expression: may it require grad, and which
/// buffers does it share a version counter with.
struct Value {
  bool Grad = false;
  llvm::SmallVector<const FieldDecl *, 1> Buffers;

  /// Joins Other in; true if this value grew.
  bool join(const Value &Other) {
    bool Grew = Other.Grad && !Grad;
    Grad |= Other.Grad;
    for (const FieldDecl *Buffer : Other.Buffers)
      if (!llvm::is_contained(Buffers, Buffer)) {
        Buffers.push_back(Buffer);
        Grew = true;
      }
    return Grew;
  }
};

Value gradValue() {
  Value V;
  V.Grad = true;
  return V;
}

} // namespace

bool isTensor(QualType Type) {
  const CXXRecordDecl *Record = Type.getNonReferenceType()->getAsCXXRecordDecl();
  if (!Record)
    return false;
  std::string Name = qualifiedName(Record);
  return Name == "at::Tensor" || Name == "at::TensorBase";
}

StringRef outermostNamespace(const Decl *D) {
  StringRef Outer;
  for (const DeclContext *DC = D->getDeclContext(); DC; DC = DC->getParent())
    if (const auto *NS = dyn_cast<NamespaceDecl>(DC))
      if (!NS->isInline() && NS->getIdentifier())
        Outer = NS->getName();
  return Outer;
}

bool isTorchDecl(const Decl *D) {
  StringRef Outer = outermostNamespace(D);
  return Outer == "at" || Outer == "torch" || Outer == "c10";
}

bool isModuleRecord(const CXXRecordDecl *Record) {
  if (!Record)
    return false;
  std::string Qualified = qualifiedName(Record);
  if (StringRef(Qualified).starts_with("torch::nn::") &&
      (Qualified == "torch::nn::Module" ||
       Qualified == "torch::nn::ModuleHolder"))
    return true;
  if (!Record->hasDefinition())
    return false;
  return llvm::any_of(Record->getDefinition()->bases(),
                      [](const CXXBaseSpecifier &Base) {
                        return isModuleRecord(
                            Base.getType()->getAsCXXRecordDecl());
                      });
}

namespace {

/// The module a type holds: T for ModuleHolder<T> and the TORCH_MODULE
/// classes derived from it, else the type itself.
const clang::Type *heldModule(QualType Type) {
  Type = pointee(Type);
  if (const CXXRecordDecl *Record = Type->getAsCXXRecordDecl()) {
    const auto *Spec = dyn_cast<ClassTemplateSpecializationDecl>(Record);
    if (Spec && qualifiedName(Spec) == "torch::nn::ModuleHolder" &&
        Spec->getTemplateArgs().size() > 0 &&
        Spec->getTemplateArgs()[0].getKind() == TemplateArgument::Type)
      return heldModule(Spec->getTemplateArgs()[0].getAsType());
    if (Record->hasDefinition())
      for (const CXXBaseSpecifier &Base : Record->getDefinition()->bases()) {
        const clang::Type *Held = heldModule(Base.getType());
        if (Held != pointee(Base.getType()).getCanonicalType().getTypePtr())
          return Held;
      }
  }
  return Type.getCanonicalType().getTypePtr();
}

/// Follows buffers through the functions a forward runs, and records the
/// first operation that saves one and the first thing it cannot follow.
class ForwardWalker {
public:
  ForwardWalker(const CXXRecordDecl *Module,
                const llvm::SmallPtrSetImpl<const FieldDecl *> &BufferFields)
      : Module(Module), BufferFields(BufferFields) {}

  /// Walks F with these argument values; returns its result's value.
  Value run(const FunctionDecl *F, ArrayRef<Value> Args);

  std::optional<Verdict> Saved;
  std::optional<Verdict> Unknown;

private:
  struct Frame {
    llvm::DenseMap<const VarDecl *, Value> Locals;
    Value Returned;
    bool Changed = false;
  };

  Value eval(const Expr *E, Frame &F);
  void visit(const Stmt *S, Frame &F);
  void bind(const Expr *Target, const Value &V, Frame &F);
  Value call(const Expr *Call, const FunctionDecl *Callee,
             ArrayRef<const Expr *> Operands, bool Method, Frame &F);
  Value torchOp(const Expr *Call, StringRef Name, Form Called,
                ArrayRef<const Expr *> Operands, ArrayRef<Value> Values,
                Frame &F);
  Value joinAll(ArrayRef<Value> Values);
  bool isThisMethod(const CXXMethodDecl *Method, const Expr *Object);
  void unknown(SourceLocation Loc, const Twine &Reason);
  /// Marks the buffers in the operands as unknown: they escape here.
  void escapes(SourceLocation Loc, ArrayRef<Value> Values, const Twine &Into);

  const CXXRecordDecl *Module;
  const llvm::SmallPtrSetImpl<const FieldDecl *> &BufferFields;
  llvm::SmallPtrSet<const FunctionDecl *, 8> Active;
};

void ForwardWalker::unknown(SourceLocation Loc, const Twine &Reason) {
  if (!Unknown)
    Unknown = Verdict{Verdict::Kind::Assumed, Loc, Reason.str()};
}

void ForwardWalker::escapes(SourceLocation Loc, ArrayRef<Value> Values,
                            const Twine &Into) {
  for (const Value &V : Values)
    if (!V.Buffers.empty())
      return unknown(Loc, "buffer '" + V.Buffers.front()->getName() +
                              "' is passed to " + Into);
}

Value ForwardWalker::joinAll(ArrayRef<Value> Values) {
  Value Joined;
  for (const Value &V : Values)
    Joined.join(V);
  return Joined;
}

Value ForwardWalker::run(const FunctionDecl *F, ArrayRef<Value> Args) {
  const FunctionDecl *Definition = nullptr;
  if (!F->hasBody(Definition) || !Active.insert(Definition).second) {
    escapes(F->getLocation(), Args,
            "'" + F->getNameAsString() + "', whose body is not visible");
    return gradValue();
  }
  Frame Frame;
  for (unsigned I = 0; I < Definition->getNumParams(); ++I)
    Frame.Locals[Definition->getParamDecl(I)] =
        I < Args.size() ? Args[I] : gradValue();
  // Flow-insensitive: values only grow, so a few passes reach the fixpoint
  // of loops that carry a buffer from one iteration to the next.
  for (int Pass = 0; Pass < 4; ++Pass) {
    Frame.Changed = false;
    visit(Definition->getBody(), Frame);
    if (!Frame.Changed)
      break;
  }
  Active.erase(Definition);
  return Frame.Returned;
}

void ForwardWalker::visit(const Stmt *S, Frame &F) {
  if (!S)
    return;
  if (const auto *E = dyn_cast<Expr>(S)) {
    eval(E, F);
    return;
  }
  if (const auto *Decls = dyn_cast<DeclStmt>(S)) {
    for (const Decl *D : Decls->decls())
      if (const auto *Var = dyn_cast<VarDecl>(D))
        if (const Expr *Init = Var->getInit())
          F.Changed |= F.Locals[Var].join(eval(Init, F));
    return;
  }
  if (const auto *Return = dyn_cast<ReturnStmt>(S)) {
    if (const Expr *Result = Return->getRetValue())
      F.Changed |= F.Returned.join(eval(Result, F));
    return;
  }
  for (const Stmt *Child : S->children())
    visit(Child, F);
}

void ForwardWalker::bind(const Expr *Target, const Value &V, Frame &F) {
  Target = skipImplicit(Target);
  if (const auto *Ref = dyn_cast<DeclRefExpr>(Target)) {
    if (const auto *Var = dyn_cast<VarDecl>(Ref->getDecl()))
      F.Changed |= F.Locals[Var].join(V);
  } else if (const auto *Member = dyn_cast<MemberExpr>(Target)) {
    if (const auto *Field = dyn_cast<FieldDecl>(Member->getMemberDecl()))
      if (BufferFields.contains(Field))
        unknown(Member->getExprLoc(),
                "buffer '" + Field->getName() + "' is assigned in the forward");
  }
}

bool ForwardWalker::isThisMethod(const CXXMethodDecl *Method,
                                 const Expr *Object) {
  if (!Object || !isa<CXXThisExpr>(skipImplicit(Object)))
    return false;
  const CXXRecordDecl *Parent = Method->getParent();
  return Parent == Module || Module->isDerivedFrom(Parent);
}

Value ForwardWalker::eval(const Expr *E, Frame &F) {
  E = skipImplicit(E);
  if (!E)
    return {};
  if (const auto *Ref = dyn_cast<DeclRefExpr>(E)) {
    if (const auto *Var = dyn_cast<VarDecl>(Ref->getDecl())) {
      if (Var->hasLocalStorage()) {
        auto Found = F.Locals.find(Var);
        return Found == F.Locals.end() ? Value() : Found->second;
      }
      // A global may hold anything.
      return gradValue();
    }
    return {};
  }
  if (const auto *Member = dyn_cast<MemberExpr>(E)) {
    const auto *Field = dyn_cast<FieldDecl>(Member->getMemberDecl());
    const Expr *Base = skipImplicit(Member->getBase());
    if (Field && isa<CXXThisExpr>(Base)) {
      if (BufferFields.contains(Field)) {
        Value V;
        V.Buffers.push_back(Field);
        return V;
      }
      // Parameters and plain tensor members may require grad; submodules
      // and scalars are handled where they are called or do not matter.
      return isTensor(Field->getType()) ? gradValue() : Value();
    }
    if (Field && isTensor(Field->getType()) &&
        isModuleRecord(pointee(Base->getType())->getAsCXXRecordDecl())) {
      unknown(Member->getExprLoc(), "'" + Field->getName() +
                                        "' of a submodule may be a buffer");
      return gradValue();
    }
    return eval(Base, F);
  }
  if (const auto *Lambda = dyn_cast<LambdaExpr>(E)) {
    forEachStmt(Lambda->getBody(), [&](const Stmt *S) {
      const auto *Member = dyn_cast<MemberExpr>(S);
      const auto *Field =
          Member ? dyn_cast<FieldDecl>(Member->getMemberDecl()) : nullptr;
      if (Field && BufferFields.contains(Field))
        unknown(Member->getExprLoc(), "buffer '" + Field->getName() +
                                          "' is used inside a lambda");
    });
    return {};
  }
  if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(E)) {
    const auto *Callee = dyn_cast_or_null<FunctionDecl>(Op->getCalleeDecl());
    SmallVector<const Expr *, 3> Operands(Op->arg_begin(), Op->arg_end());
    if (Op->getOperator() == OO_Equal && Operands.size() == 2) {
      Value V = eval(Operands[1], F);
      bind(Operands[0], V, F);
      return V;
    }
    if (Callee)
      return call(E, Callee, Operands, /*Method=*/false, F);
  }
  if (const auto *Call = dyn_cast<CXXMemberCallExpr>(E)) {
    const CXXMethodDecl *Method = Call->getMethodDecl();
    SmallVector<const Expr *, 3> Operands;
    Operands.push_back(Call->getImplicitObjectArgument());
    Operands.append(Call->arg_begin(), Call->arg_end());
    if (Method)
      return call(E, Method, Operands, /*Method=*/true, F);
  }
  if (const auto *Call = dyn_cast<CallExpr>(E)) {
    SmallVector<const Expr *, 3> Operands(Call->arg_begin(), Call->arg_end());
    if (const FunctionDecl *Callee = Call->getDirectCallee())
      return call(E, Callee, Operands, /*Method=*/false, F);
  }
  if (const auto *Binary = dyn_cast<BinaryOperator>(E)) {
    if (Binary->isAssignmentOp()) {
      Value V = eval(Binary->getRHS(), F);
      bind(Binary->getLHS(), V, F);
      return V;
    }
  }
  if (const auto *Conditional = dyn_cast<ConditionalOperator>(E)) {
    eval(Conditional->getCond(), F);
    Value V = eval(Conditional->getTrueExpr(), F);
    V.join(eval(Conditional->getFalseExpr(), F));
    return V;
  }
  // Anything else (initialiser lists, constructions, casts, arithmetic on
  // scalars): the join of its parts.
  Value Joined;
  for (const Stmt *Child : E->children())
    if (const auto *ChildExpr = dyn_cast_or_null<Expr>(Child))
      Joined.join(eval(ChildExpr, F));
  return Joined;
}

Value ForwardWalker::call(const Expr *Call, const FunctionDecl *Callee,
                          ArrayRef<const Expr *> Operands, bool Method,
                          Frame &F) {
  const auto *CalleeMethod = dyn_cast<CXXMethodDecl>(Callee);
  // The module's own helpers: followed with the arguments' values.
  if (Method && CalleeMethod && isThisMethod(CalleeMethod, Operands[0])) {
    SmallVector<Value, 3> Args;
    for (const Expr *Arg : Operands.drop_front())
      Args.push_back(eval(Arg, F));
    return run(Callee, Args);
  }

  SmallVector<Value, 3> Values;
  for (const Expr *Operand : Operands)
    Values.push_back(eval(Operand, F));
  std::string Name = operatorName(Callee);
  SourceLocation Loc = Call->getExprLoc();

  const CXXRecordDecl *Parent = CalleeMethod ? CalleeMethod->getParent() : nullptr;
  if (Parent && qualifiedName(Parent) == "torch::nn::Module") {
    // The module's API: buffers() and named_buffers() hand out every buffer.
    if (Name == "buffers" || Name == "named_buffers")
      unknown(Loc, "the forward reads the buffers through '" + Name + "()'");
    return gradValue();
  }
  if (Parent && isModuleRecord(Parent)) {
    // A submodule's forward: its parameters make the result require grad.
    escapes(Loc, ArrayRef<Value>(Values).drop_front(),
            "a submodule ('" + Parent->getNameAsString() + "')");
    return gradValue();
  }
  if (isTorchDecl(Callee)) {
    Form Called = Method         ? Form::Method
                  : isFunctional(Callee) ? Form::Functional
                                         : Form::Function;
    if (Callee->getOverloadedOperator())
      Called = Form::Any;
    return torchOp(Call, Name, Called, Operands, Values, F);
  }
  if (outermostNamespace(Callee) == "std") {
    if ((Name == "move" || Name == "forward") && Values.size() == 1)
      return Values[0];
    escapes(Loc, Values, "'std::" + Name + "'");
    return joinAll(Values);
  }
  // A user function: followed if its body is visible.
  if ((!CalleeMethod || CalleeMethod->isStatic()) && !Callee->isVariadic() &&
      Callee->hasBody())
    return run(Callee, Values);
  escapes(Loc, Values, "'" + Name + "', whose body is not visible");
  return gradValue();
}

Value ForwardWalker::torchOp(const Expr *Call, StringRef Name, Form Called,
                             ArrayRef<const Expr *> Operands,
                             ArrayRef<Value> Values, Frame &F) {
  SourceLocation Loc = Call->getExprLoc();
  const SavedOp *Op = findSavedOp(Name, Called);
  if (!Op) {
    escapes(Loc, Values,
            "'" + Name + "', which is not in the table of saved operands");
    return joinAll(Values);
  }
  if (torch::isInPlaceOp(Name) && !Values.empty() && !Values[0].Buffers.empty())
    unknown(Loc, "buffer '" + Values[0].Buffers.front()->getName() +
                     "' is modified in place by '" + Name + "'");
  // The result is a new tensor, never a buffer: only operands matter.
  for (const SaveRule &Rule : saveRules(Op->Saves)) {
    if (!Rule.Operand || *Rule.Operand >= Values.size() ||
        Values[*Rule.Operand].Buffers.empty())
      continue;
    for (unsigned T : Rule.Triggers) {
      if (T < Values.size() && Values[T].Grad && !this->Saved) {
        this->Saved =
            Verdict{Verdict::Kind::Saved, Loc,
                    "'" + Name.str() + "' saves buffer '" +
                        Values[*Rule.Operand].Buffers.front()->getName().str() +
                        "' for backward"};
        break;
      }
    }
  }
  Value Result;
  switch (Op->Result) {
  case Result::View:
    Result = Values.empty() ? Value() : Values[0];
    Result.Grad = joinAll(Values).Grad;
    // An in-place operation changes its first operand.
    if (torch::isInPlaceOp(Name) && !Operands.empty())
      bind(Operands[0], Result, F);
    break;
  case Result::New:
    Result.Grad = joinAll(Values).Grad;
    break;
  case Result::Constant:
    break;
  }
  return Result;
}

/// Whether a BatchNorm constructed by E tracks running statistics: the
/// value of a visible `track_running_stats(...)`, else the default (true)
/// when every options object in E is visible.
std::optional<bool> tracksRunningStats(const Expr *E, ASTContext &Context,
                                       unsigned Depth = 0) {
  if (!E || Depth > 4)
    return std::nullopt;
  std::optional<bool> Setting;
  bool Visible = true;
  forEachStmt(E, [&](const Stmt *S) {
    if (const auto *Call = dyn_cast<CXXMemberCallExpr>(S)) {
      const CXXMethodDecl *Method = Call->getMethodDecl();
      bool Value;
      if (Method && Method->getIdentifier() &&
          Method->getName() == "track_running_stats" &&
          Call->getNumArgs() == 1) {
        if (Call->getArg(0)->EvaluateAsBooleanCondition(Value, Context))
          Setting = Value;
        else
          Visible = false;
      }
    }
    const auto *Ref = dyn_cast<DeclRefExpr>(S);
    const auto *Var = Ref ? dyn_cast<VarDecl>(Ref->getDecl()) : nullptr;
    if (!Var || !Var->getType()->getAsCXXRecordDecl())
      return;
    // An options or module variable: its initialiser, if it is a local.
    std::optional<bool> Inner;
    if (Var->hasLocalStorage() && !isa<ParmVarDecl>(Var) && Var->getInit())
      Inner = tracksRunningStats(Var->getInit(), Context, Depth + 1);
    if (Inner)
      Setting = *Inner;
    else
      Visible = false;
  });
  if (Setting)
    return Setting;
  if (Visible)
    return true;
  return std::nullopt;
}

Verdict notSaved() { return Verdict{Verdict::Kind::NotSaved, {}, ""}; }

bool startsWithAny(StringRef Name, std::initializer_list<StringRef> Prefixes) {
  return llvm::any_of(Prefixes,
                      [&](StringRef Prefix) { return Name.starts_with(Prefix); });
}

/// The worse of two verdicts: Saved over Assumed over NotSaved.
void merge(Verdict &Into, const Verdict &Other) {
  if (Other.K != Verdict::Kind::NotSaved &&
      (Into.K == Verdict::Kind::NotSaved ||
       (Into.K == Verdict::Kind::Assumed && Other.K == Verdict::Kind::Saved)))
    Into = Other;
}

} // namespace

Verdict SavedBuffers::forModule(QualType ModuleType) {
  return forType(ModuleType, nullptr, /*InputsRequireGrad=*/false);
}

Verdict SavedBuffers::forType(QualType ModuleType, const Expr *Construction,
                              bool InputsRequireGrad) {
  if (ModuleType.isNull())
    return Verdict{Verdict::Kind::Assumed, {},
                   "the wrapped module's type is not known"};
  QualType Type = pointee(ModuleType);
  const CXXRecordDecl *Record = Type->getAsCXXRecordDecl();
  if (Type->isDependentType() || !Record)
    return Verdict{Verdict::Kind::Assumed, {},
                   "the module's type '" + Type.getAsString() +
                       "' is not known"};
  std::string Name = qualifiedName(Record);
  if (StringRef(Name).starts_with("torch::nn::")) {
    StringRef Short = StringRef(Name).drop_front(strlen("torch::nn::"));
    Short.consume_back("Impl");
    return forTorchModule(Record, Short, Construction, InputsRequireGrad);
  }
  return forUserModule(Record, InputsRequireGrad);
}

Verdict SavedBuffers::forTorchModule(const CXXRecordDecl *Record,
                                     StringRef Short,
                                     const Expr *Construction,
                                     bool InputsRequireGrad) {
  if (Short == "ModuleHolder") {
    const auto *Spec = dyn_cast<ClassTemplateSpecializationDecl>(Record);
    if (Spec && Spec->getTemplateArgs().size() > 0 &&
        Spec->getTemplateArgs()[0].getKind() == TemplateArgument::Type)
      return forType(Spec->getTemplateArgs()[0].getAsType(), Construction,
                     InputsRequireGrad);
  }
  if (Short == "Module" || Short == "Cloneable")
    return notSaved();
  if (Short.starts_with("BatchNorm")) {
    // batch_norm saves running_mean and running_var for backward, in train
    // and in eval mode; without running statistics there are no buffers.
    std::optional<bool> Tracks = tracksRunningStats(Construction, Context);
    SourceLocation Loc = Construction ? Construction->getBeginLoc()
                                      : Record->getLocation();
    if (!Tracks)
      return Verdict{Verdict::Kind::Assumed, Loc,
                     "the options of 'torch::nn::" + Short.str() +
                         "' are not visible; assuming it tracks running "
                         "statistics"};
    if (!*Tracks)
      return notSaved();
    return Verdict{Verdict::Kind::Saved, Loc,
                   "'torch::nn::" + Short.str() +
                       "' saves its running statistics for backward"};
  }
  // InstanceNorm normalises with copies of its running statistics, so it
  // saves none of its buffers (ground-truth.md); the others have none.
  if (startsWithAny(Short,
                    {"InstanceNorm", "Linear", "Bilinear", "Conv", "ReLU",
                     "LeakyReLU", "GELU", "SiLU", "Mish", "ELU", "SELU", "CELU",
                     "PReLU", "Sigmoid", "Tanh", "Softmax", "LogSoftmax",
                     "Softplus", "Dropout", "AlphaDropout",
                     "FeatureAlphaDropout", "Embedding", "LSTM", "GRU", "RNN",
                     "LayerNorm", "GroupNorm", "Flatten", "Unflatten",
                     "Identity", "MaxPool", "AvgPool", "Adaptive", "Upsample",
                     "PixelShuffle", "Hardtanh", "Threshold", "ZeroPad",
                     "ReflectionPad", "ReplicationPad", "ConstantPad", "Fold",
                     "Unfold", "LocalResponseNorm", "CosineSimilarity",
                     "PairwiseDistance"}))
    return notSaved();
  return Verdict{Verdict::Kind::Assumed,
                 Construction ? Construction->getBeginLoc()
                              : Record->getLocation(),
                 "'torch::nn::" + Short.str() +
                     "' is not in the table of modules"};
}

Verdict SavedBuffers::forUserModule(const CXXRecordDecl *Record,
                                    bool InputsRequireGrad) {
  if (!Record->hasDefinition())
    return Verdict{Verdict::Kind::Assumed, Record->getLocation(),
                   "the definition of '" + Record->getNameAsString() +
                       "' is not visible"};
  Record = Record->getDefinition();
  auto &Cached = Cache[InputsRequireGrad];
  auto Found = Cached.find(Record);
  if (Found != Cached.end())
    return Found->second;
  // A module that holds itself adds nothing through the cycle.
  Cached[Record] = notSaved();

  // The record and its user bases: buffers registered into fields,
  // registered submodules, fields of module type.
  // LibTorch bases (a ModuleHolder names its module) come from the table.
  Verdict Result = notSaved();
  SmallVector<const CXXRecordDecl *, 4> Classes{Record};
  for (unsigned I = 0; I < Classes.size(); ++I)
    for (const CXXBaseSpecifier &Base : Classes[I]->bases()) {
      const CXXRecordDecl *BaseRecord = Base.getType()->getAsCXXRecordDecl();
      if (BaseRecord &&
          StringRef(qualifiedName(BaseRecord)).starts_with("torch::"))
        merge(Result, forType(Base.getType(), nullptr, InputsRequireGrad));
      else if (BaseRecord && BaseRecord->hasDefinition())
        Classes.push_back(BaseRecord->getDefinition());
      else
        merge(Result, forType(Base.getType(), nullptr, InputsRequireGrad));
    }

  llvm::SmallPtrSet<const FieldDecl *, 4> BufferFields;
  bool Buffers = false;
  llvm::SmallPtrSet<const clang::Type *, 4> Registered;
  auto FieldOf = [](const Expr *Target) -> const FieldDecl * {
    const auto *Member = dyn_cast_or_null<MemberExpr>(skipImplicit(Target));
    return Member ? dyn_cast<FieldDecl>(Member->getMemberDecl()) : nullptr;
  };
  for (const CXXRecordDecl *Class : Classes) {
    for (const Decl *Member : Class->decls()) {
      const auto *Method = dyn_cast<CXXMethodDecl>(Member);
      if (const auto *Template = dyn_cast<FunctionTemplateDecl>(Member))
        Method = dyn_cast<CXXMethodDecl>(Template->getTemplatedDecl());
      if (!Method)
        continue;
      // `field = register_buffer(...)` and `field(register_buffer(...))`.
      auto Registrations = [&](const Stmt *Root, const FieldDecl *Init) {
        forEachStmt(Root, [&](const Stmt *S) {
          const FieldDecl *Target = Init;
          if (const auto *Assign = dyn_cast<CXXOperatorCallExpr>(S))
            if (Assign->getOperator() == OO_Equal && Assign->getNumArgs() == 2)
              Target = FieldOf(Assign->getArg(0));
          const Expr *Value = nullptr;
          if (const auto *Assign = dyn_cast<CXXOperatorCallExpr>(S))
            Value = Assign->getOperator() == OO_Equal && Assign->getNumArgs() == 2
                        ? skipImplicit(Assign->getArg(1))
                        : nullptr;
          const auto *Call = dyn_cast<CallExpr>(S);
          const FunctionDecl *Callee = Call ? Call->getDirectCallee() : nullptr;
          if (Value) {
            const auto *Inner = dyn_cast<CallExpr>(Value);
            const FunctionDecl *InnerCallee =
                Inner ? Inner->getDirectCallee() : nullptr;
            if (Target && InnerCallee && InnerCallee->getIdentifier() &&
                InnerCallee->getName() == "register_buffer")
              BufferFields.insert(Target);
            return;
          }
          if (!Callee || !Callee->getIdentifier())
            return;
          if (Callee->getName() == "register_buffer") {
            Buffers = true;
            if (Init)
              BufferFields.insert(Init);
          } else if (Callee->getName() == "register_module" &&
                     Call->getNumArgs() == 2) {
            // The argument as written: skipImplicit would look through
            // the holder's converting constructor to its options.
            const Expr *Module = Call->getArg(1);
            Registered.insert(heldModule(Module->getType()));
            merge(Result, forType(Module->getType(), Module, true));
          }
        });
      };
      Registrations(Method->getBody(), nullptr);
      if (const auto *Ctor = dyn_cast<CXXConstructorDecl>(Method))
        for (const CXXCtorInitializer *Init : Ctor->inits())
          if (Init->isWritten() && Init->getInit())
            Registrations(Init->getInit(), Init->getMember());
    }
    // Submodules held in fields whose registration is out of sight.
    for (const FieldDecl *Field : Class->fields()) {
      QualType Type = pointee(Field->getType());
      const CXXRecordDecl *FieldRecord = Type->getAsCXXRecordDecl();
      if (!FieldRecord || !isModuleRecord(FieldRecord) ||
          Registered.contains(heldModule(Type)))
        continue;
      merge(Result, forType(Type, nullptr, true));
    }
  }

  if (Buffers) {
    // Follow the buffers through every visible forward.
    ForwardWalker Walker(Record, BufferFields);
    bool Visible = false;
    for (const CXXRecordDecl *Class : Classes)
      for (const Decl *Member : Class->decls()) {
        const auto *Method = dyn_cast<CXXMethodDecl>(Member);
        if (!Method || !Method->getIdentifier() ||
            Method->getName() != "forward")
          continue;
        if (!Method->hasBody())
          continue;
        Visible = true;
        SmallVector<Value, 2> Args(Method->getNumParams());
        for (Value &Arg : Args)
          Arg.Grad = InputsRequireGrad;
        Walker.run(Method, Args);
      }
    if (Walker.Saved)
      merge(Result, *Walker.Saved);
    else if (Walker.Unknown)
      merge(Result, *Walker.Unknown);
    else if (!Visible)
      merge(Result, Verdict{Verdict::Kind::Assumed, Record->getLocation(),
                            "the forward of '" + Record->getNameAsString() +
                                "' is not visible"});
  }
  Cache[InputsRequireGrad][Record] = Result;
  return Result;
}

bool drawsRandomNumbers(const FunctionDecl *Callee) {
  if (!Callee || !Callee->getIdentifier() || !isTorchDecl(Callee))
    return false;
  StringRef Name = Callee->getName();
  // The factories and samplers (rand, randn_like, randint, randperm,
  // random_), dropout in every form, the distributions' in-place samplers,
  // torch::nn::init's random initialisers, and reseeding.
  return Name.starts_with("rand") || Name.contains("dropout") ||
         startsWithAny(Name, {"kaiming_", "xavier_", "orthogonal_",
                              "sparse_", "trunc_normal_"}) ||
         llvm::is_contained(
             {"bernoulli", "bernoulli_", "normal", "normal_", "uniform_",
              "exponential_", "geometric_", "cauchy_", "log_normal_",
              "multinomial", "poisson", "binomial", "rrelu", "rrelu_",
              "rrelu_with_noise", "gumbel_softmax", "manual_seed", "seed",
              "set_rng_state"},
             Name);
}

std::optional<std::string> SavedBuffers::whyForwardMayDraw(QualType ModuleType) {
  if (ModuleType.isNull())
    return "the wrapped module's type is not known";
  QualType Type(heldModule(ModuleType), 0);
  const CXXRecordDecl *Record = Type->getAsCXXRecordDecl();
  if (Type->isDependentType() || !Record)
    return "the module's type '" + Type.getAsString() + "' is not known";
  std::string Name = qualifiedName(Record);
  if (StringRef(Name).starts_with("torch::nn::")) {
    StringRef Short = StringRef(Name).drop_front(strlen("torch::nn::"));
    Short.consume_back("Impl");
    if (Short == "Module" || Short == "Cloneable")
      return std::nullopt;
    // Dropout layers draw in training mode; recurrent layers and attention
    // may hold dropout in their options.
    if (startsWithAny(Short, {"Dropout", "AlphaDropout", "FeatureAlphaDropout",
                              "RReLU"}))
      return "'torch::nn::" + Short.str() + "' draws random numbers";
    if (startsWithAny(Short,
                      {"Linear", "Bilinear", "Conv", "BatchNorm",
                       "InstanceNorm", "LayerNorm", "GroupNorm", "ReLU",
                       "LeakyReLU", "GELU", "SiLU", "Mish", "ELU", "SELU",
                       "CELU", "PReLU", "Sigmoid", "Tanh", "Softmax",
                       "LogSoftmax", "Softplus", "Embedding", "Flatten",
                       "Unflatten", "Identity", "MaxPool", "AvgPool",
                       "Adaptive", "Upsample", "PixelShuffle", "Hardtanh",
                       "Threshold", "ZeroPad", "ReflectionPad",
                       "ReplicationPad", "ConstantPad", "Fold", "Unfold",
                       "LocalResponseNorm", "CosineSimilarity",
                       "PairwiseDistance", "LSTMCell", "GRUCell", "RNNCell"}))
      return std::nullopt;
    return "'torch::nn::" + Short.str() +
           "' is not known to draw no random numbers";
  }
  if (!Record->hasDefinition())
    return "the definition of '" + Record->getNameAsString() +
           "' is not visible";
  Record = Record->getDefinition();
  auto Found = DrawCache.find(Record);
  if (Found != DrawCache.end())
    return Found->second;
  // A module that holds itself draws nothing more through the cycle.
  DrawCache[Record] = std::nullopt;
  std::optional<std::string> Result;
  bool Visible = false;
  SmallVector<const CXXRecordDecl *, 4> Classes{Record};
  for (unsigned I = 0; I < Classes.size() && !Result; ++I) {
    for (const CXXBaseSpecifier &Base : Classes[I]->bases()) {
      const CXXRecordDecl *BaseRecord = Base.getType()->getAsCXXRecordDecl();
      if (BaseRecord && !isTorchDecl(BaseRecord) && BaseRecord->hasDefinition())
        Classes.push_back(BaseRecord->getDefinition());
    }
    for (const CXXMethodDecl *Method : Classes[I]->methods())
      if (Method->getIdentifier() && Method->getName() == "forward" &&
          Method->hasBody() && !Result) {
        Visible = true;
        Result = whyMayDraw(Method->getBody());
      }
  }
  if (!Result && !Visible)
    Result = "the forward of '" + Record->getNameAsString() +
             "' is not visible";
  DrawCache[Record] = Result;
  return Result;
}

std::optional<std::string> SavedBuffers::whyMayDraw(const Stmt *Root) {
  if (!Root)
    return std::nullopt;
  const SourceManager &SM = Context.getSourceManager();
  auto At = [&](const Expr *E) {
    return " (line " + std::to_string(SM.getPresumedLineNumber(E->getExprLoc())) +
           ")";
  };
  if (const auto *Call = dyn_cast<CallExpr>(Root)) {
    const FunctionDecl *Callee = Call->getDirectCallee();
    if (!Callee)
      return "a call cannot be resolved" + At(Call);
    std::string Name = operatorName(Callee);
    const auto *Method = dyn_cast<CXXMethodDecl>(Callee);
    const CXXRecordDecl *Parent = Method ? Method->getParent() : nullptr;
    const Expr *Object = nullptr;
    if (const auto *MemberCall = dyn_cast<CXXMemberCallExpr>(Call))
      Object = MemberCall->getImplicitObjectArgument();
    else if (Method && isa<CXXOperatorCallExpr>(Call) && Call->getNumArgs() > 0)
      Object = Call->getArg(0);
    if (drawsRandomNumbers(Callee))
      return "'" + Name + "' draws random numbers" + At(Call);
    if (Parent && isModuleRecord(Parent) && Object &&
        !isa<CXXThisExpr>(skipImplicit(Object))) {
      // A submodule's forward, or the module API (train(), parameters()).
      if (qualifiedName(Parent) != "torch::nn::Module")
        if (std::optional<std::string> Why = whyForwardMayDraw(Object->getType()))
          return Why;
    } else if (isTorchDecl(Callee)) {
      // LibTorch's other operations draw nothing.
    } else if (outermostNamespace(Callee) == "std") {
      if (Callee->getOverloadedOperator() == OO_Call)
        return "a std::function is called" + At(Call);
    } else {
      // The module's helpers and the functions they call: followed.
      const FunctionDecl *Definition = nullptr;
      if (!Callee->hasBody(Definition))
        return "'" + Name + "', whose body is not visible, is called" + At(Call);
      if (Method && Method->isVirtual())
        return "virtual '" + Name + "' is called" + At(Call);
      if (Drawing.insert(Definition).second) {
        std::optional<std::string> Why = whyMayDraw(Definition->getBody());
        Drawing.erase(Definition);
        if (Why)
          return Why;
      }
    }
  }
  // Lambda bodies too: what a lambda draws is drawn where it is called.
  for (const Stmt *Child : Root->children())
    if (std::optional<std::string> Why = whyMayDraw(Child))
      return Why;
  return std::nullopt;
}

} // namespace clangfe
} // namespace ddpguard
