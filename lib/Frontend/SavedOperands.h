//===- SavedOperands.h - LibTorch operations and what they save ----------===//
//
// The table of SavedOperands.def, shared by the saved-buffer analysis (does
// a module's forward save a buffer?) and the translation of in-place writes
// on values (which tensors does an operation save for backward?).
//
//===----------------------------------------------------------------------===//

#ifndef DDPGUARD_FRONTEND_SAVEDOPERANDS_H
#define DDPGUARD_FRONTEND_SAVEDOPERANDS_H

#include "clang/AST/Expr.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include <optional>
#include <string>

namespace ddpguard {
namespace clangfe {

struct SavedOp {
  enum class Form { Any, Method, Function, Functional };
  enum class Result { View, New, Constant };
  llvm::StringRef Name;
  Form OpForm;
  Result OpResult;
  /// SavedOperands.def's rules: "i:jk" saves operand i, "r:jk" the result,
  /// if operand j or k requires grad.
  llvm::StringRef Saves;
};

/// The entry for an operation called in this form; Any stands for the
/// method, the function and the functional form.
const SavedOp *findSavedOp(llvm::StringRef Name, SavedOp::Form Called);

/// `operator*` for an overloaded operator, else the callee's name.
std::string operatorName(const clang::FunctionDecl *Callee);

/// A declaration inside a namespace named `functional`.
bool isFunctional(const clang::Decl *D);

/// A call of a LibTorch operation (at::, torch::, c10::) with its operands in
/// the table's order: the object a method is called on first.
struct TorchOpCall {
  const clang::CallExpr *Call = nullptr;
  std::string Name;
  SavedOp::Form Called = SavedOp::Form::Function;
  llvm::SmallVector<const clang::Expr *, 4> Operands;
  /// Null for an operation the table does not list.
  const SavedOp *Op = nullptr;
};
std::optional<TorchOpCall> matchTorchOp(const clang::CallExpr *Call);

/// One rule of SavedOp::Saves: what is saved (an operand, or the result) if
/// one of Triggers requires grad.
struct SaveRule {
  std::optional<unsigned> Operand;
  llvm::SmallVector<unsigned, 3> Triggers;
};
llvm::SmallVector<SaveRule, 2> saveRules(const SavedOp &Op);

} // namespace clangfe
} // namespace ddpguard

#endif
