//===- SavedOperands.h - LibTorch operations and what they save ----------===//
//
// Calls of LibTorch operations matched to Torch/Ops.h's table, for the
// saved-buffer analysis (does a module's forward save a buffer?) and the
// translation of in-place writes on values (which tensors does an operation
// save for backward?).
//
//===----------------------------------------------------------------------===//

#ifndef DDPGUARD_FRONTEND_SAVEDOPERANDS_H
#define DDPGUARD_FRONTEND_SAVEDOPERANDS_H

#include "Torch/Ops.h"
#include "clang/AST/Expr.h"
#include "llvm/ADT/SmallVector.h"
#include <optional>
#include <string>

namespace ddpguard {
namespace clangfe {

using torch::findSavedOp;
using torch::SavedOp;
using torch::SavedOpForm;
using torch::SavedOpResult;
using torch::SaveRule;
using torch::saveRules;

/// `operator*` for an overloaded operator, else the callee's name.
std::string operatorName(const clang::FunctionDecl *Callee);

/// A declaration inside a namespace named `functional`.
bool isFunctional(const clang::Decl *D);

/// A call of a LibTorch operation (at::, torch::, c10::) with its operands in
/// the table's order: the object a method is called on first.
struct TorchOpCall {
  const clang::CallExpr *Call = nullptr;
  std::string Name;
  SavedOpForm Called = SavedOpForm::Function;
  llvm::SmallVector<const clang::Expr *, 4> Operands;
  /// Null for an operation the table does not list.
  const SavedOp *Op = nullptr;
};
std::optional<TorchOpCall> matchTorchOp(const clang::CallExpr *Call);

} // namespace clangfe
} // namespace ddpguard

#endif
