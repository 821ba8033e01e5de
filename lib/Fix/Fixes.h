//===- Fixes.h - Rewrites that remove the hazard --------------------------===//
//
// broadcast: set broadcast_buffers to false where the DDP object is
// constructed, as its rule says. fuse: replace consecutive forwards on one
// DDP object by one call to the rule's fused forward.
//
//===----------------------------------------------------------------------===//

#ifndef DDPGUARD_FIX_FIXES_H
#define DDPGUARD_FIX_FIXES_H

#include "Frontend/TranslationUnitAnalysis.h"
#include "clang/Basic/Diagnostic.h"
#include "llvm/ADT/DenseSet.h"
#include <string>
#include <vector>

namespace ddpguard {
namespace fix {

struct FixOutcome {
  std::vector<clang::FixItHint> Hints;
  /// Why there is no fix, when Hints is empty.
  std::string Reason;
  bool applies() const { return !Hints.empty(); }
};

/// Outcome, or no fix and Reason when one of its edits is not at a file
/// location (inside a macro expansion): Clang would drop such edits, and with
/// them the whole fix, without a word.
inline FixOutcome requireFileLocations(FixOutcome Outcome, std::string Reason) {
  for (const clang::FixItHint &Hint : Outcome.Hints) {
    const clang::CharSourceRange &Range = Hint.RemoveRange;
    if (Range.isInvalid() || !Range.getBegin().isFileID() ||
        !Range.getEnd().isFileID()) {
      FixOutcome Withheld;
      Withheld.Reason = std::move(Reason);
      return Withheld;
    }
  }
  return Outcome;
}

FixOutcome makeBroadcastFix(const clangfe::Construction &C,
                            clang::ASTContext &Context);

/// Makes fuse fixes; indexes each function's statement blocks once, so that
/// many findings in one long function stay cheap.
class FuseFixer {
public:
  FuseFixer(clangfe::DDPObjects &Objects, clang::ASTContext &Context)
      : Objects(Objects), Context(Context) {}
  FixOutcome make(const clangfe::Finding &F);

private:
  /// Where a statement holding a forward sits: its block and index there.
  struct Position {
    const clang::CompoundStmt *Block;
    unsigned Index;
  };
  void index(const clang::FunctionDecl *Function);

  clangfe::DDPObjects &Objects;
  clang::ASTContext &Context;
  llvm::DenseSet<const clang::FunctionDecl *> Indexed;
  llvm::DenseMap<const clang::Expr *, Position> Positions;
};

} // namespace fix
} // namespace ddpguard

#endif
