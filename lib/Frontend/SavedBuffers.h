//===- SavedBuffers.h - Does a module's forward save a buffer? ------------===//
//
// DDP's broadcast before a forward overwrites buffers in place; that breaks a
// pending backward only if an earlier forward's graph saved one of them.
// This analysis answers, for a wrapped module type, whether its forward
// saves a buffer for backward:
//
// - torch::nn modules from a table (BatchNorm with running statistics saves
//   them in train and eval mode; InstanceNorm, LayerNorm, GroupNorm and the
//   buffer-free layers save none), reading `track_running_stats` from the
//   construction where it is visible;
// - user modules by following each registered buffer through the visible
//   forward (and the module's helpers and functions with visible bodies)
//   and asking SavedOperands.def whether the operation that receives it
//   saves it, given whether the other operands may require grad.
//
// What cannot be followed is assumed to save, with the reason kept for the
// diagnostic. See docs/ground-truth.md, "Which buffers are saved for
// backward".
//
// The same walk over a module's types and forward answers whether the
// forward draws random numbers (dropout, torch::rand...), which the fuse fix
// asks before it moves a forward past a statement that draws.
//
//===----------------------------------------------------------------------===//

#ifndef DDPGUARD_FRONTEND_SAVEDBUFFERS_H
#define DDPGUARD_FRONTEND_SAVEDBUFFERS_H

#include "clang/AST/ASTContext.h"
#include "clang/AST/DeclCXX.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"
#include <optional>
#include <string>

namespace ddpguard {
namespace clangfe {

/// The outermost namespace of a declaration: "at" for at::native::foo.
llvm::StringRef outermostNamespace(const clang::Decl *D);

/// A declaration in LibTorch's namespaces (at, c10, torch).
bool isTorchDecl(const clang::Decl *D);

/// A torch::nn module or module holder, or a user class derived from one.
bool isModuleRecord(const clang::CXXRecordDecl *Record);

/// at::Tensor or at::TensorBase, or a reference to one.
bool isTensor(clang::QualType Type);

/// Callee draws from LibTorch's random number generator or reseeds it:
/// torch::rand, randn_like, bernoulli_, dropout, torch::nn::init::normal_...
bool drawsRandomNumbers(const clang::FunctionDecl *Callee);

struct SavedBuffersVerdict {
  enum class Kind {
    /// No forward of the module saves a buffer: DDP's broadcast is harmless.
    NotSaved,
    /// An operation of the forward saves a buffer.
    Saved,
    /// Something could not be followed; assumed to save.
    Assumed,
  };
  Kind K = Kind::Assumed;
  /// The operation that saves a buffer, or what could not be followed.
  clang::SourceLocation Loc;
  std::string Reason;

  bool saves() const { return K != Kind::NotSaved; }
};

class SavedBuffers {
public:
  explicit SavedBuffers(clang::ASTContext &Context) : Context(Context) {}

  /// Whether the forward of a module of this type (a module, a
  /// ModuleHolder, a pointer or smart pointer to either) saves a buffer for
  /// backward when its inputs do not require grad.
  SavedBuffersVerdict forModule(clang::QualType ModuleType);

  /// Why the forward of a module of this type may draw random numbers (a
  /// dropout layer, a random operation, something it cannot follow), or
  /// nothing when it provably draws none.
  std::optional<std::string> whyForwardMayDraw(clang::QualType ModuleType);

private:
  SavedBuffersVerdict forType(clang::QualType Type,
                              const clang::Expr *Construction,
                              bool InputsRequireGrad);
  SavedBuffersVerdict forTorchModule(const clang::CXXRecordDecl *Record,
                                     llvm::StringRef Short,
                                     const clang::Expr *Construction,
                                     bool InputsRequireGrad);
  SavedBuffersVerdict forUserModule(const clang::CXXRecordDecl *Record,
                                    bool InputsRequireGrad);

  clang::ASTContext &Context;
  /// Why the statements below Root may draw random numbers, following the
  /// calls they make; nothing when they draw none.
  std::optional<std::string> whyMayDraw(const clang::Stmt *Root);

  /// Per record, with inputs that do not / may require grad.
  llvm::DenseMap<const clang::CXXRecordDecl *, SavedBuffersVerdict> Cache[2];
  llvm::DenseMap<const clang::CXXRecordDecl *, std::optional<std::string>>
      DrawCache;
  /// The functions whose bodies are being walked for random draws.
  llvm::SmallPtrSet<const clang::FunctionDecl *, 8> Drawing;
};

} // namespace clangfe
} // namespace ddpguard

#endif
