//===- Fixes.h - Rewrites that remove the hazard --------------------------===//
//
// broadcast: set broadcast_buffers to false where the DDP object is
// constructed, as its rule says. fuse: replace the forwards on one DDP
// object in one block by one call to the rule's fused forward, its
// arguments hoisted into locals in their original order; forwards move
// past the statements between them only where that provably keeps the
// program's meaning. once-per-backward: set the rule's
// once-per-backward buffer policy where the DDP object is constructed. A
// DDP parameter is constructed by its callers (Frontend/Callers.h): the fix
// is made at each caller's construction.
//
//===----------------------------------------------------------------------===//

#ifndef DDPGUARD_FIX_FIXES_H
#define DDPGUARD_FIX_FIXES_H

#include "Frontend/TranslationUnitAnalysis.h"
#include "clang/Basic/Diagnostic.h"
#include "llvm/ADT/DenseSet.h"
#include <map>
#include <string>
#include <vector>

namespace ddpguard {
namespace fix {

struct FixOutcome {
  std::vector<clang::FixItHint> Hints;
  /// Why there is no fix, when Hints is empty.
  std::string Reason;
  /// Withheld because the construction is not visible in this translation
  /// unit (the CLI may find it in another file).
  bool ConstructionNotVisible = false;
  /// A fix at constructions: each construction it edits with the index of
  /// its first hint (a parameter's fix edits each caller's construction).
  std::vector<std::pair<const clangfe::Construction *, unsigned>> Edits;
  bool applies() const { return !Hints.empty(); }
};

/// Keeps the edits of the constructions not in Fixed and adds those to it,
/// so that each construction is edited once; false when an earlier fix
/// already edits every one.
bool claimConstructions(FixOutcome &Outcome,
                        llvm::DenseSet<const clangfe::Construction *> &Fixed);

/// No fix, and why.
inline FixOutcome withheldFix(std::string Reason) {
  FixOutcome Withheld;
  Withheld.Reason = std::move(Reason);
  return Withheld;
}

/// Outcome, or no fix and Reason when one of its edits is not at a file
/// location (inside a macro expansion): Clang would drop such edits, and with
/// them the whole fix, without a word.
inline FixOutcome requireFileLocations(FixOutcome Outcome, std::string Reason) {
  for (const clang::FixItHint &Hint : Outcome.Hints) {
    const clang::CharSourceRange &Range = Hint.RemoveRange;
    if (Range.isInvalid() || !Range.getBegin().isFileID() ||
        !Range.getEnd().isFileID())
      return withheldFix(std::move(Reason));
  }
  return Outcome;
}

/// Why a construction fix cannot be made for Object: its construction is
/// not in this translation unit. The CLI replaces this reason when it finds
/// the construction in another file.
std::string constructionNotVisible(llvm::StringRef Object);

/// Sets broadcast_buffers to false at the construction, or for a parameter
/// whose callers are all seen at each caller's construction that broadcasts,
/// with the setter's spelling on LibTorch Version.
FixOutcome makeBroadcastFix(const clangfe::Construction &C,
                            clang::ASTContext &Context, TorchVersion Version);

/// Sets the rule's once-per-backward buffer policy at the construction, with
/// the forms of makeBroadcastFix; no fix, and why, when the rule has no such
/// policy.
FixOutcome makeOncePerBackwardFix(const clangfe::Construction &C,
                                  clang::ASTContext &Context);

struct ForwardStatement;
struct CrossedStatement;

/// Why a forward cannot move past a statement between the forwards.
struct Blocked {
  unsigned ForwardLine, Line;
  bool Down;
  /// What the statement does that forbids the move, or
  std::string What;
  /// the forward's argument, which would be evaluated before the statement.
  std::string Argument;
  std::string describe() const;
};

/// Writes an in-place write on a saved value out of place (`y = y.mul(2)`
/// for `y.mul_(2)`, `h = h + y` for `h += y`), or no fix and why: the
/// variable is not a local tensor, the write's value is used, another tensor
/// may share its storage, or there is no out-of-place twin.
FixOutcome makeOutOfPlaceFix(const clangfe::WriteFinding &F,
                             clang::ASTContext &Context);

/// Moves an optimizer step after the backward it breaks where that keeps
/// what the program computes (the backward accumulates into none of the
/// module's parameters, and nothing between them uses the module or the
/// optimizer), or no fix and why.
FixOutcome makeStepMoveFix(const clangfe::WriteFinding &F,
                           clang::ASTContext &Context);

/// Makes fuse fixes; indexes each function's statement blocks once, so that
/// many findings in one long function stay cheap.
class FuseFixer {
public:
  FuseFixer(clangfe::DDPObjects &Objects, clang::ASTContext &Context)
      : Objects(Objects), Context(Context) {}
  FixOutcome make(const clangfe::Finding &F);
  /// All findings of the translation unit: a run is fused only if no other
  /// finding pairs one of its forwards with a forward outside it (that
  /// forward would still overwrite buffers the fused forward saved, or the
  /// fused forward those of an earlier one).
  void setFindings(std::vector<clangfe::Finding> Findings) {
    All = std::move(Findings);
  }

private:
  /// Where a statement holding a forward sits: its block and index there.
  struct Position {
    const clang::CompoundStmt *Block;
    unsigned Index;
  };
  void index(const clang::FunctionDecl *Function);
  /// The fused call replaces the forward Run[Anchor]; the forwards before it
  /// move down to it, those after it up.
  FixOutcome fuse(llvm::ArrayRef<ForwardStatement> Run, unsigned Anchor,
                  const WrapperRule &Rule, const clang::FunctionDecl *Function);
  /// Why Forward cannot move (down or up) past Statement, if it cannot.
  std::optional<Blocked> whyCannotCross(const ForwardStatement &Forward,
                             const CrossedStatement &Statement, bool Down,
                             const clang::ValueDecl *Object);
  /// Why the forward of the module Object wraps may draw random numbers.
  std::optional<std::string> whyForwardMayDraw(const clang::ValueDecl *Object);
  /// Stem_N, an identifier the translation unit does not spell yet, N
  /// counting per function from 1.
  std::string freshName(const clang::FunctionDecl *Function,
                        llvm::StringRef Stem);

  clangfe::DDPObjects &Objects;
  clang::ASTContext &Context;
  std::vector<clangfe::Finding> All;
  llvm::DenseSet<const clang::FunctionDecl *> Indexed;
  llvm::DenseMap<const clang::Expr *, Position> Positions;
  /// The fix of each run of forwards, by its first forward: made once, so
  /// that the warnings of one run share its names.
  llvm::DenseMap<const clang::Expr *, FixOutcome> Made;
  clangfe::SavedBuffers Modules{Context};
  llvm::DenseMap<const clang::ValueDecl *, std::optional<std::string>>
      ForwardDraws;
  std::map<std::pair<const clang::FunctionDecl *, std::string>, unsigned>
      NextName;
};

} // namespace fix
} // namespace ddpguard

#endif
