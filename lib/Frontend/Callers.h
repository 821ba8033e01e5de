//===- Callers.h - The constructions a DDP parameter receives ------------===//
//
// A DDP object that is a parameter was constructed by a caller. The index
// finds every call of the parameter's function in the translation unit
// (helpers that pass their own parameter on, methods, lambdas called
// directly), maps each call's argument to the caller's object (a variable, a
// member, `*p`, a shared_ptr, a temporary) and resolves its construction.
//
//===----------------------------------------------------------------------===//

#ifndef DDPGUARD_FRONTEND_CALLERS_H
#define DDPGUARD_FRONTEND_CALLERS_H

#include "DDPObjects.h"
#include "llvm/ADT/DenseSet.h"

namespace ddpguard {
namespace clangfe {

/// How a note names a callee: 'name', or "the lambda".
std::string describeCallee(const clang::FunctionDecl *Function);
/// The callees of the source's calls, outermost first: 'run' → 'step'.
std::string describeChain(const CallerSource &Source);

class CallerIndex {
public:
  /// Indexes the calls and uses of every function outside system headers.
  CallerIndex(clang::ASTContext &Context, DDPObjects &Objects);

  /// The constructions the callers of Param's function pass for it.
  CallerSources resolve(const clang::ParmVarDecl &Param);

  /// Indexing state, filled by the visitor in Callers.cpp.
  struct Uses {
    llvm::SmallVector<const clang::CallExpr *, 4> Calls;
    /// A use that is no call (its address taken, a lambda passed on), so
    /// calls may happen where we cannot see them.
    const clang::Expr *Escape = nullptr;
  };

private:
  const Uses *usesOf(const clang::FunctionDecl *Function);

  clang::ASTContext &Context;
  DDPObjects &Objects;
  /// By canonical function, and for a lambda's call operator by its class.
  llvm::DenseMap<const clang::Decl *, Uses> Index;
  /// Parameters whose callers are being resolved: a recursive call passes
  /// one back in.
  llvm::DenseSet<const clang::ParmVarDecl *> InProgress;
};

} // namespace clangfe
} // namespace ddpguard

#endif
