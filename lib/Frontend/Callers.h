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
/// How a construction sets broadcast_buffers, as a note says it:
/// "'broadcast_buffers' is true by default".
std::string describeBroadcast(const Construction &From);

/// A parameter that a DDP parameter's object comes from, whose own function
/// is not called in the translation unit but may be called from another one
/// (it is visible outside it, and not virtual): the object's construction may
/// be in another file.
struct OpenEnd {
  const clang::ParmVarDecl *Root = nullptr;
  /// The calls from Root's function on to the parameter's, outermost first.
  llvm::SmallVector<const clang::CallExpr *, 2> Calls;
};

class CallerIndex {
public:
  /// Indexes the calls and uses of every function outside system headers.
  CallerIndex(clang::ASTContext &Context, DDPObjects &Objects);

  /// The constructions the callers of Param's function pass for it.
  CallerSources resolve(const clang::ParmVarDecl &Param);
  /// As resolve, but a function that is not called here and may be called
  /// from another translation unit is an open end, added to Open, rather
  /// than a failure: Complete when every call here was followed to a
  /// construction or to an open end.
  CallerSources resolveAcrossFiles(const clang::ParmVarDecl &Param,
                                   llvm::SmallVectorImpl<OpenEnd> &Open);
  /// What one call passes for Param, which may be declared in another file:
  /// its constructions, or its open ends when the argument is a parameter.
  CallerSources resolveArgument(const clang::CallExpr &Call,
                                const clang::ParmVarDecl &Param,
                                llvm::SmallVectorImpl<OpenEnd> &Open);

  /// The functions called or otherwise used, and how.
  template <typename Visit> void forEachCallee(Visit V) const {
    for (const auto &[Key, U] : Index)
      if (const auto *Function = llvm::dyn_cast<clang::FunctionDecl>(Key))
        V(*Function, U);
  }

  /// Indexing state, filled by the visitor in Callers.cpp.
  struct Uses {
    llvm::SmallVector<const clang::CallExpr *, 4> Calls;
    /// A use that is no call (its address taken, a lambda passed on), so
    /// calls may happen where we cannot see them.
    const clang::Expr *Escape = nullptr;
  };

private:
  const Uses *usesOf(const clang::FunctionDecl *Function);
  /// resolve, or with Open resolveAcrossFiles.
  CallerSources resolveCalls(const clang::ParmVarDecl &Param,
                             llvm::SmallVectorImpl<OpenEnd> *Open);
  /// Follows what Call passes for Param into Result; false, with Result's
  /// WhyNot set, when it is not followed.
  bool follow(const clang::CallExpr &Call, const clang::ParmVarDecl &Param,
              CallerSources &Result, llvm::SmallVectorImpl<OpenEnd> *Open);

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
