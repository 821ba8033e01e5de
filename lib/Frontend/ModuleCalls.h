//===- ModuleCalls.h - Forwards of plain modules, optimizers and steps ----===//
//
// The C++ side of the write event (docs/design.md, "The write event"):
// which expressions run a forward of a torch::nn module that no DDP wrapper
// holds, what that forward saves of the module's parameters, which module's
// parameters an optimizer was built over, and whether its step() bumps
// their version counters in LibTorch (docs/ground-truth.md, "Optimizer
// steps and version counters").
//
//===----------------------------------------------------------------------===//

#ifndef DDPGUARD_FRONTEND_MODULECALLS_H
#define DDPGUARD_FRONTEND_MODULECALLS_H

#include "DDPObjects.h"
#include "llvm/ADT/DenseMap.h"
#include <optional>
#include <string>

namespace ddpguard {
namespace clangfe {

/// What a grad-mode forward of a module saves of its parameters.
enum class ParameterSaving {
  /// No parameter (a layer without any, Embedding).
  None,
  /// The weight, iff an input requires grad (Linear, Bilinear): autograd
  /// needs the weight only for the input's gradient.
  IfInputsRequireGrad,
  /// Always: Conv*, norms, modules of two layers or more (the inner layers'
  /// inputs derive from parameters) and modules of unknown type.
  Always,
};

/// A forward of a module that no DDP wrapper rule names.
struct ModuleForward {
  const clang::Expr *Call = nullptr;
  /// The variable or member holding the module.
  const clang::ValueDecl *Module = nullptr;
  llvm::SmallVector<const clang::Expr *, 2> Args;
};

/// An optimizer variable or member and what its step writes.
struct Optimizer {
  const clang::ValueDecl *Decl = nullptr;
  /// The module (or DDP object) whose parameters it was built over; null
  /// when that is not followed.
  const clang::ValueDecl *Module = nullptr;
  /// Its type as written in the notes: 'torch::optim::Adam'.
  std::string Type;
  /// step() bumps the parameters' version counters. When false (LibTorch's
  /// SGD, measured) it writes them all the same, through p.data(): silently.
  bool Writes = true;
  /// The type is not in the measured table: Writes is an assumption.
  bool Assumed = false;
};

/// A call of step() on an optimizer.
struct StepCall {
  const clang::CXXMemberCallExpr *Call = nullptr;
  const Optimizer *Opt = nullptr;
};

/// An in-place tensor operation on a module's parameters outside an
/// optimizer: `p.clamp_(-c, c)` over `M->parameters()`, `t[i].mul_(m)`,
/// `M->weight += d`, `torch::nn::init::zeros_(M->bias)`.
/// An in-place write on a tensor: a method with PyTorch's trailing
/// underscore, a compound assignment, an assignment into a temporary (`h[0] =
/// 0`, `h.index({i}) = v`: copy_ or fill_), or an at::/torch:: function with
/// a trailing underscore on its first argument.
struct TensorWrite {
  const clang::CallExpr *Call = nullptr;
  /// The tensor written, as written: `p`, `t[i]`, `M->weight`.
  const clang::Expr *Tensor = nullptr;
  /// The operation as the notes name it: 'clamp_', 'operator+='.
  std::string Operation;
  /// A function of at::/torch:: whose first argument may be a list of
  /// tensors (`torch::_foreach_mul_`).
  bool OnList = false;
};
std::optional<TensorWrite> matchTensorWrite(const clang::Stmt *S);

struct ParameterWrite : TensorWrite {
  /// The module (or DDP object) whose parameters it is.
  const clang::ValueDecl *Module = nullptr;
  /// Tensor is a list of the module's parameters (`torch::_foreach_mul_`),
  /// not one of them.
  bool WholeList = false;
};

class ModuleCalls {
public:
  explicit ModuleCalls(DDPObjects &Objects) : Objects(Objects) {}

  /// S runs the forward of a plain module held by a variable or member.
  std::optional<ModuleForward> matchForward(const clang::Stmt *S);
  /// What a forward of Module saves of its parameters.
  ParameterSaving savingOf(const clang::ValueDecl *Module);
  /// S is `opt.step()` (or `opt->step()`) on an optimizer variable or member.
  std::optional<StepCall> matchStep(const clang::Stmt *S);
  /// S writes a module's parameters in place, bumping their version
  /// counters. A write through `p.data()` does not: its version counter is
  /// a new one (docs/ground-truth.md, "Optimizer steps and version
  /// counters"); one through a view (`p.detach()`, `p[0]`) does.
  std::optional<ParameterWrite> matchParameterWrite(const clang::Stmt *S);
  /// S writes in place through `x.data()` (`p.data().add_(g, -lr)`), whose
  /// version counter is a new one, so autograd sees nothing. Tensor is `x`;
  /// Module is set when x is a module's parameter.
  std::optional<ParameterWrite> matchDataWrite(const clang::Stmt *S);

private:
  /// Null when Decl holds no optimizer.
  const Optimizer *optimizer(const clang::ValueDecl *Decl);
  /// The module whose parameters Params (an optimizer's first argument)
  /// lists: `M->parameters()`, `D.module()->parameters()`,
  /// `M->named_parameters()` (and its `values()`), or a local vector
  /// initialised with one of them.
  const clang::ValueDecl *parametersOf(const clang::Expr *Params,
                                       unsigned Depth = 0);
  /// The module whose parameter (or a view of it) Tensor is: an element of
  /// a list parametersOf follows (`p` of a range-for over it, `t[i]`,
  /// `item.value()`), `M->weight` or `M->bias`, or a local variable
  /// initialised with one of them.
  const clang::ValueDecl *parameterOwner(const clang::Expr *Tensor,
                                         unsigned Depth = 0);
  /// The list a range-for's loop variable Var runs over.
  const clang::ValueDecl *rangeOwner(const clang::VarDecl *Var,
                                     unsigned Depth);

  DDPObjects &Objects;
  llvm::DenseMap<const clang::ValueDecl *, std::optional<Optimizer>>
      Optimizers;
  llvm::DenseMap<const clang::ValueDecl *, ParameterSaving> Savings;
};

} // namespace clangfe
} // namespace ddpguard

#endif
