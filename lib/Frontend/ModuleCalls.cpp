//===- ModuleCalls.cpp ----------------------------------------------------===//

#include "ModuleCalls.h"
#include "SavedBuffers.h"
#include "Torch/InPlace.h"
#include "clang/AST/DeclCXX.h"
#include "clang/AST/ExprCXX.h"
#include "llvm/ADT/StringSwitch.h"

using namespace clang;

namespace ddpguard {
namespace clangfe {

static StringRef nameOf(const CXXMethodDecl *Method) {
  return Method && Method->getIdentifier() ? Method->getName() : "";
}

/// The expression a member call is made on: `m` in `m.f()` and `m->f()`,
/// also when `->` is a smart pointer's or a holder's operator.
static const Expr *calledOn(const CXXMemberCallExpr *Call) {
  const auto *Member = dyn_cast<MemberExpr>(Call->getCallee()->IgnoreParens());
  if (!Member)
    return Call->getImplicitObjectArgument();
  const Expr *Base = Member->getBase();
  if (const auto *Arrow = dyn_cast<CXXOperatorCallExpr>(Base->IgnoreImplicit()))
    if (Arrow->getOperator() == OO_Arrow && Arrow->getNumArgs() == 1)
      return Arrow->getArg(0);
  return Base;
}

static bool isModuleType(QualType Type) {
  return !Type.isNull() && isModuleRecord(pointee(Type)->getAsCXXRecordDecl());
}

std::optional<ModuleForward> ModuleCalls::matchForward(const Stmt *S) {
  ModuleForward Forward;
  const Expr *On = nullptr;
  if (const auto *Call = dyn_cast<CXXMemberCallExpr>(S)) {
    if (nameOf(Call->getMethodDecl()) != "forward")
      return std::nullopt;
    On = calledOn(Call);
    Forward.Args.append(Call->arg_begin(), Call->arg_end());
  } else if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(S)) {
    if (Op->getOperator() != OO_Call || Op->getNumArgs() == 0)
      return std::nullopt;
    On = Op->getArg(0);
    Forward.Args.append(Op->arg_begin() + 1, Op->arg_end());
  }
  // DDP objects are DDPObjects' forwards.
  if (!On || !isModuleType(On->getType()) || Objects.ruleFor(On->getType()))
    return std::nullopt;
  Forward.Module = Objects.objectOf(On);
  if (!Forward.Module || !isModuleType(Forward.Module->getType()))
    return std::nullopt;
  Forward.Call = cast<Expr>(S);
  return Forward;
}

/// torch::nn layers by what their forward saves of their parameters,
/// measured with an Adam step between the forward and its backward
/// (docs/ground-truth.md, "Which parameters a module's forward saves").
static ParameterSaving torchLayerSaving(StringRef Short) {
  // addmm/mm and _trilinear save the weight only for the input's gradient.
  if (Short == "Linear" || Short == "Bilinear")
    return ParameterSaving::IfInputsRequireGrad;
  // Layers without parameters, and Embedding, whose backward needs only the
  // indices.
  bool WithoutSavedParameters =
      llvm::StringSwitch<bool>(Short)
          .Cases("ReLU", "ReLU6", "LeakyReLU", "GELU", "SiLU", "Mish", true)
          .Cases("ELU", "SELU", "CELU", "Sigmoid", "Tanh", "Softplus", true)
          .Cases("Softmax", "LogSoftmax", "Softmin", "Hardtanh", true)
          .Cases("Threshold", "Flatten", "Unflatten", "Identity", true)
          .Cases("Upsample", "PixelShuffle", "PixelUnshuffle", "Fold", true)
          .Cases("Unfold", "CosineSimilarity", "PairwiseDistance", true)
          .Case("Embedding", true)
          .Default(false);
  for (StringRef Family : {"Dropout", "AlphaDropout", "FeatureAlphaDropout",
                           "MaxPool", "AvgPool", "Adaptive", "ZeroPad",
                           "ReflectionPad", "ReplicationPad", "ConstantPad"})
    WithoutSavedParameters |= Short.starts_with(Family);
  return WithoutSavedParameters ? ParameterSaving::None
                                : ParameterSaving::Always;
}

ParameterSaving ModuleCalls::savingOf(const ValueDecl *Module) {
  auto [It, Inserted] = Savings.try_emplace(Module, ParameterSaving::Always);
  if (!Inserted)
    return It->second;
  const CXXRecordDecl *Record =
      pointee(Module->getType())->getAsCXXRecordDecl();
  if (const CXXRecordDecl *Held = heldModule(Record))
    Record = Held;
  if (!Record || Objects.ruleFor(Module->getType()))
    return It->second;
  std::string Name = qualifiedName(Record);
  StringRef Short(Name);
  if (Short.consume_front("torch::nn::")) {
    Short.consume_back("Impl");
    It->second = torchLayerSaving(Short);
  }
  return It->second;
}

/// The module an expression names: `m`, `*m`, `m.get()`, or the module of
/// a DDP object, `d.module()`, which stands for the object.
static const ValueDecl *moduleOf(const Expr *E, DDPObjects &Objects) {
  E = skipImplicit(E);
  if (const auto *Op = dyn_cast_or_null<CXXOperatorCallExpr>(E))
    if ((Op->getOperator() == OO_Arrow || Op->getOperator() == OO_Star) &&
        Op->getNumArgs() == 1)
      return moduleOf(Op->getArg(0), Objects);
  if (const auto *Call = dyn_cast_or_null<CXXMemberCallExpr>(E))
    if (nameOf(Call->getMethodDecl()) == "module")
      if (const ValueDecl *Object = Objects.objectOf(calledOn(Call)))
        if (Objects.ruleFor(Object->getType()))
          return Object;
  return Objects.objectOf(E);
}

/// Local variables are followed through their initialisers this deep:
/// enough for `auto &w = t[i]` over `auto t = M->parameters()`, and an end
/// on code that names a variable in its own initialiser.
static constexpr unsigned MaxDepth = 8;

/// A local variable with an initialiser that E names.
static const VarDecl *localVariable(const Expr *E) {
  const auto *Ref = dyn_cast_or_null<DeclRefExpr>(skipImplicit(E));
  const auto *Var = Ref ? dyn_cast<VarDecl>(Ref->getDecl()) : nullptr;
  return Var && Var->isLocalVarDecl() && Var->getInit() ? Var : nullptr;
}

const ValueDecl *ModuleCalls::parametersOf(const Expr *Params,
                                           unsigned Depth) {
  if (Depth > MaxDepth)
    return nullptr;
  Params = skipImplicit(Params);
  if (const auto *Call = dyn_cast_or_null<CXXMemberCallExpr>(Params)) {
    StringRef Name = nameOf(Call->getMethodDecl());
    if (Name == "parameters" || Name == "named_parameters")
      return moduleOf(calledOn(Call), Objects);
    // `M->named_parameters().values()`.
    if (Name == "values")
      return parametersOf(calledOn(Call), Depth + 1);
  }
  // A local vector of one module's parameters.
  if (const VarDecl *Var = localVariable(Params))
    return parametersOf(Var->getInit(), Depth + 1);
  return nullptr;
}

const ValueDecl *ModuleCalls::rangeOwner(const VarDecl *Var, unsigned Depth) {
  // `for (auto &p : R)` is `auto &&__range = R; auto __begin =
  // __range.begin(); ...; auto &p = *__begin;`.
  const Expr *Init = skipImplicit(Var->getInit());
  const Expr *Iterator = nullptr;
  if (const auto *Op = dyn_cast_or_null<CXXOperatorCallExpr>(Init)) {
    if (Op->getOperator() == OO_Star && Op->getNumArgs() == 1)
      Iterator = Op->getArg(0);
  } else if (const auto *Unary = dyn_cast_or_null<UnaryOperator>(Init)) {
    if (Unary->getOpcode() == UO_Deref)
      Iterator = Unary->getSubExpr();
  }
  const VarDecl *Begin = localVariable(Iterator);
  if (!Begin)
    return nullptr;
  const Expr *Range = skipImplicit(Begin->getInit());
  if (const auto *Member = dyn_cast_or_null<CXXMemberCallExpr>(Range))
    Range = Member->getImplicitObjectArgument();
  else if (const auto *Call = dyn_cast_or_null<CallExpr>(Range))
    Range = Call->getNumArgs() == 1 ? Call->getArg(0) : nullptr;
  const VarDecl *RangeVar = localVariable(Range);
  return RangeVar ? parametersOf(RangeVar->getInit(), Depth + 1) : nullptr;
}

static bool isTensorRecord(const CXXRecordDecl *Record) {
  if (!Record)
    return false;
  std::string Name = qualifiedName(Record);
  return Name == "at::Tensor" || Name == "at::TensorBase";
}

static bool isTensorType(QualType Type) {
  return isTensorRecord(Type.getNonReferenceType()->getAsCXXRecordDecl());
}

/// Tensor methods whose result is a view sharing its object's version
/// counter, so that an in-place write to it bumps the object's. `data()` is
/// not one: its version counter is a new one.
static bool isView(StringRef Name) {
  return llvm::StringSwitch<bool>(Name)
      .Cases("view", "view_as", "slice", "narrow", "select", "t", true)
      .Cases("transpose", "permute", "squeeze", "unsqueeze", "expand", true)
      .Cases("expand_as", "diagonal", "detach", true)
      .Default(false);
}

const ValueDecl *ModuleCalls::parameterOwner(const Expr *Tensor,
                                             unsigned Depth) {
  if (Depth > MaxDepth)
    return nullptr;
  const Expr *E = skipImplicit(Tensor);
  if (const VarDecl *Var = localVariable(E))
    return Var->isCXXForRangeDecl() ? rangeOwner(Var, Depth + 1)
                                    : parameterOwner(Var->getInit(), Depth + 1);
  if (const auto *Op = dyn_cast_or_null<CXXOperatorCallExpr>(E)) {
    if (Op->getOperator() != OO_Subscript || Op->getNumArgs() != 2)
      return nullptr;
    // `w[0]`, a view of a parameter, or `t[i]` of a list of parameters.
    const Expr *Base = Op->getArg(0);
    return isTensorType(Base->getType()) ? parameterOwner(Base, Depth + 1)
                                         : parametersOf(Base, Depth + 1);
  }
  if (const auto *Call = dyn_cast_or_null<CXXMemberCallExpr>(E)) {
    StringRef Name = nameOf(Call->getMethodDecl());
    const Expr *On = Call->getImplicitObjectArgument();
    if (isView(Name) && isTensorType(On->getType()))
      return parameterOwner(On, Depth + 1);
    if (Name == "at" || Name == "front" || Name == "back")
      return parametersOf(On, Depth + 1);
    // `item.value()` in a range-for over `M->named_parameters()`.
    if (Name == "value")
      if (const VarDecl *Item = localVariable(On);
          Item && Item->isCXXForRangeDecl())
        return rangeOwner(Item, Depth + 1);
    return nullptr;
  }
  // `M->weight`, `M->bias`: a layer's parameters.
  if (const auto *Member = dyn_cast_or_null<MemberExpr>(E)) {
    const auto *Field = dyn_cast<FieldDecl>(Member->getMemberDecl());
    if (Field && Field->getIdentifier() &&
        (Field->getName() == "weight" || Field->getName() == "bias") &&
        isModuleRecord(dyn_cast<CXXRecordDecl>(Field->getParent())))
      return moduleOf(Member->getBase(), Objects);
  }
  return nullptr;
}

std::optional<TensorWrite> matchTensorWrite(const Stmt *S) {
  const auto *Call = dyn_cast<CallExpr>(S);
  if (!Call)
    return std::nullopt;
  TensorWrite Write;
  Write.Call = Call;
  if (const auto *Member = dyn_cast<CXXMemberCallExpr>(Call)) {
    const CXXMethodDecl *Method = Member->getMethodDecl();
    StringRef Name = nameOf(Method);
    if (!torch::isInPlaceOp(Name) || !isTensorRecord(Method->getParent()))
      return std::nullopt;
    Write.Tensor = Member->getImplicitObjectArgument();
    Write.Operation = Name.str();
  } else if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(Call)) {
    if (!Op->isAssignmentOp() || Op->getNumArgs() != 2 ||
        !isTensorType(Op->getArg(0)->getType()))
      return std::nullopt;
    // Assigning to a Tensor variable rebinds the handle; assigning to a
    // temporary (at::Tensor's `operator=(...) &&`) writes its storage.
    if (Op->getOperator() == OO_Equal) {
      const auto *Method = dyn_cast_or_null<CXXMethodDecl>(Op->getCalleeDecl());
      if (!Method || Method->getRefQualifier() != RQ_RValue)
        return std::nullopt;
    }
    Write.Tensor = Op->getArg(0);
    Write.Operation =
        (Twine("operator") + getOperatorSpelling(Op->getOperator())).str();
  } else {
    // `torch::nn::init::zeros_(M->bias)`, `torch::_foreach_mul_(list, m)`;
    // clip_grad_norm_ and its kin write gradients.
    const FunctionDecl *Callee = Call->getDirectCallee();
    if (!Callee || !Callee->getIdentifier() || Call->getNumArgs() == 0 ||
        !torch::isInPlaceOp(Callee->getName()))
      return std::nullopt;
    std::string Qualified = Callee->getQualifiedNameAsString();
    StringRef Namespace = StringRef(Qualified).rsplit("::").first;
    if (Namespace != "at" && Namespace != "torch" &&
        Namespace != "torch::nn::init")
      return std::nullopt;
    Write.Tensor = Call->getArg(0);
    Write.Operation = Qualified;
    Write.OnList = true;
  }
  return Write;
}

std::optional<ParameterWrite>
ModuleCalls::matchParameterWrite(const Stmt *S) {
  std::optional<TensorWrite> Written = matchTensorWrite(S);
  if (!Written)
    return std::nullopt;
  ParameterWrite Write;
  static_cast<TensorWrite &>(Write) = std::move(*Written);
  Write.Module = parameterOwner(Write.Tensor);
  if (!Write.Module && Write.OnList) {
    Write.Module = parametersOf(Write.Tensor);
    Write.WholeList = Write.Module != nullptr;
  }
  if (!Write.Module)
    return std::nullopt;
  return Write;
}

/// `x` of `x.data()`, or null.
static const Expr *dataReceiver(const Expr *Tensor) {
  const auto *Call = dyn_cast_or_null<CXXMemberCallExpr>(skipImplicit(Tensor));
  if (!Call || Call->getNumArgs() != 0 ||
      nameOf(Call->getMethodDecl()) != "data" ||
      !isTensorRecord(Call->getMethodDecl()->getParent()))
    return nullptr;
  return Call->getImplicitObjectArgument();
}

std::optional<ParameterWrite> ModuleCalls::matchDataWrite(const Stmt *S) {
  std::optional<TensorWrite> Written = matchTensorWrite(S);
  const Expr *Through = Written ? dataReceiver(Written->Tensor) : nullptr;
  if (!Through)
    return std::nullopt;
  ParameterWrite Write;
  static_cast<TensorWrite &>(Write) = std::move(*Written);
  Write.Tensor = Through;
  Write.Module = parameterOwner(Through);
  return Write;
}

/// The construction an initialiser holds (a constructor call,
/// std::make_unique/make_shared, new): its arguments and the type it makes.
static const Expr *constructionOf(const Expr *Init, QualType &Made) {
  Init = skipImplicit(Init);
  if (const auto *New = dyn_cast_or_null<CXXNewExpr>(Init)) {
    Made = New->getAllocatedType();
    return New->getInitializer();
  }
  if (const auto *Call = dyn_cast_or_null<CallExpr>(Init))
    if (const FunctionDecl *Callee = Call->getDirectCallee()) {
      std::string Name = Callee->getQualifiedNameAsString();
      if (Name == "std::make_unique" || Name == "std::make_shared") {
        Made = pointee(Call->getType());
        return Call;
      }
    }
  if (const auto *Construct = dyn_cast_or_null<CXXConstructExpr>(Init)) {
    Made = Construct->getType();
    return Construct;
  }
  return nullptr;
}

static const Expr *firstArgument(const Expr *Construction) {
  if (const auto *Construct = dyn_cast_or_null<CXXConstructExpr>(Construction))
    return Construct->getNumArgs() > 0 ? Construct->getArg(0) : nullptr;
  if (const auto *Call = dyn_cast_or_null<CallExpr>(Construction))
    return Call->getNumArgs() > 0 ? Call->getArg(0) : nullptr;
  if (const auto *List = dyn_cast_or_null<ParenListExpr>(Construction))
    return List->getNumExprs() > 0 ? List->getExpr(0) : nullptr;
  return nullptr;
}

/// The optimizer class a type names, or null: a class of torch::optim or
/// one derived from torch::optim::Optimizer.
static const CXXRecordDecl *optimizerClass(QualType Type) {
  const CXXRecordDecl *Record = pointee(Type)->getAsCXXRecordDecl();
  if (!Record)
    return nullptr;
  if (StringRef(qualifiedName(Record)).starts_with("torch::optim::"))
    return Record;
  if (!Record->hasDefinition())
    return nullptr;
  for (const CXXBaseSpecifier &Base : Record->getDefinition()->bases())
    if (optimizerClass(Base.getType()))
      return Record;
  return nullptr;
}

const Optimizer *ModuleCalls::optimizer(const ValueDecl *Decl) {
  auto [It, Inserted] = Optimizers.try_emplace(Decl);
  if (!Inserted)
    return It->second ? &*It->second : nullptr;
  if (!optimizerClass(Decl->getType()))
    return nullptr;
  // The construction: the initialiser, or a constructor's member
  // initialiser.
  llvm::SmallVector<const Expr *, 2> Inits;
  if (const auto *Var = dyn_cast<VarDecl>(Decl)) {
    Inits.push_back(Var->getInit());
  } else if (const auto *Field = dyn_cast<FieldDecl>(Decl)) {
    Inits.push_back(Field->getInClassInitializer());
    for (const CXXConstructorDecl *Ctor :
         cast<CXXRecordDecl>(Field->getParent())->ctors())
      for (const CXXCtorInitializer *Init : Ctor->inits())
        if (Init->isWritten() && Init->getMember() == Field)
          Inits.push_back(Init->getInit());
  }
  QualType Made = Decl->getType();
  const Expr *Construction = nullptr;
  for (const Expr *Init : Inits)
    if (Init && (Construction = constructionOf(Init, Made)))
      break;
  Optimizer Opt;
  Opt.Decl = Decl;
  Opt.Module = parametersOf(firstArgument(Construction));
  const CXXRecordDecl *Class = optimizerClass(Made);
  if (!Class)
    Class = optimizerClass(Decl->getType());
  Opt.Type = qualifiedName(Class);
  // Measured by scripts/optimizer-versions.sh: LibTorch's SGD updates
  // through p.data(), whose version counter is a new one.
  StringRef Short(Opt.Type);
  if (Short.consume_front("torch::optim::") &&
      llvm::is_contained({"Adam", "AdamW", "RMSprop", "Adagrad", "LBFGS"},
                         Short))
    Opt.Writes = true;
  else if (Short == "SGD")
    Opt.Writes = false;
  else
    Opt.Assumed = true;
  It->second = std::move(Opt);
  return &*It->second;
}

std::optional<StepCall> ModuleCalls::matchStep(const Stmt *S) {
  const auto *Call = dyn_cast<CXXMemberCallExpr>(S);
  if (!Call || nameOf(Call->getMethodDecl()) != "step")
    return std::nullopt;
  const ValueDecl *Decl = Objects.objectOf(calledOn(Call));
  const Optimizer *Opt = Decl ? optimizer(Decl) : nullptr;
  if (!Opt)
    return std::nullopt;
  return StepCall{Call, Opt};
}

} // namespace clangfe
} // namespace ddpguard
