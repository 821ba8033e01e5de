//===- ModuleCalls.cpp ----------------------------------------------------===//

#include "ModuleCalls.h"
#include "SavedBuffers.h"
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

const ValueDecl *ModuleCalls::parametersOf(const Expr *Params) {
  Params = skipImplicit(Params);
  if (const auto *Call = dyn_cast_or_null<CXXMemberCallExpr>(Params))
    if (nameOf(Call->getMethodDecl()) == "parameters")
      return moduleOf(calledOn(Call), Objects);
  // A local vector of one module's parameters.
  if (const auto *Ref = dyn_cast_or_null<DeclRefExpr>(Params))
    if (const auto *Var = dyn_cast<VarDecl>(Ref->getDecl()))
      if (Var->isLocalVarDecl() && Var->getInit())
        return parametersOf(Var->getInit());
  return nullptr;
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
