//===- Ops.h - Torch operations: what they save, view or write -----------===//
//
// One reading of SavedOperands.def for both frontends (which operands or
// result an operation saves for backward), and the method tables next to
// it: views and in-place methods' out-of-place twins. No Clang, no
// tree-sitter: the frontends match calls and ask here by name.
//
//===----------------------------------------------------------------------===//

#ifndef DDPGUARD_TORCH_OPS_H
#define DDPGUARD_TORCH_OPS_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include <optional>

namespace ddpguard {
namespace torch {

using llvm::StringRef;

/// How an operation is called (SavedOperands.def's Form; Any stands for the
/// method, the function and the functional form), and what it returns.
enum class SavedOpForm { Any, Method, Function, Functional };
enum class SavedOpResult { View, New, Constant };
struct SavedOp {
  StringRef Name;
  SavedOpForm Form;
  SavedOpResult Result;
  /// "i:jk" saves operand i, "r:jk" the result, if operand j or k requires
  /// grad.
  StringRef Saves;
};

/// The entry for an operation called in this form: the entry of that form,
/// else the entry of form Any.
const SavedOp *findSavedOp(StringRef Name, SavedOpForm Called);

/// One rule of SavedOp::Saves: the operand saved (none: the result) if one
/// of Triggers requires grad.
struct SaveRule {
  std::optional<unsigned> Operand;
  llvm::SmallVector<unsigned, 3> Triggers;
};
llvm::SmallVector<SaveRule, 2> saveRules(StringRef Saves);

/// Tensor methods whose result shares the tensor's storage and version
/// counter: the table's views, and conversions that return the tensor
/// itself when there is nothing to convert (as `to`).
bool isViewMethod(StringRef Name);

/// In-place methods whose out-of-place twin takes the same arguments:
/// x.mul_(2) is x = x.mul(2). Each twin was confirmed with hasattr on
/// torch 2.11.0 and 2.15.0; fill_, zero_, copy_, normal_, uniform_ and
/// fill_diagonal_ have none, and bernoulli_ and resize_ have twins that do
/// something else.
bool hasOutOfPlaceTwin(StringRef Method);

} // namespace torch
} // namespace ddpguard

#endif
