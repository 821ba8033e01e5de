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

FixOutcome makeBroadcastFix(const clangfe::Construction &C,
                            clang::ASTContext &Context);

FixOutcome makeFuseFix(const clangfe::Finding &F, clangfe::DDPObjects &Objects,
                       clang::ASTContext &Context);

} // namespace fix
} // namespace ddpguard

#endif
