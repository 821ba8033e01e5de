//===- MultipleForwardBeforeBackward.cpp ----------------------------------===//
//
// ddp-multiple-forward-before-backward: a forward's clobber to its Finding.
//
//===----------------------------------------------------------------------===//

#include "../Lowering.h"

namespace ddpguard {
namespace python {
namespace detail {

void Lowering::findMultipleForwardBeforeBackward(const AnalysisResult &R,
                                                 const Clobber &C,
                                                 CheckResult &Result) {
  Lowering &L = *this;
  // A broadcast over what a checkpointed forward saved: not followed.
  if (!L.Graph.isForwardOrigin(C.Writer) || C.Silent)
    return;
  const Event &Second = L.Graph.forwardOf(C.Writer);
  // The earliest saver in the file, with its first failing backward.
  std::optional<std::pair<Position, OriginId>> First;
  std::optional<SiteId> Backward;
  for (OriginId Saver : C.Savers) {
    Position At = L.Sites[L.Graph.forwardOf(Saver).Site];
    if (First && !(At < First->first))
      continue;
    if (std::optional<SiteId> B = firstOwnBackward(R, Saver, C.Writer)) {
      First = {At, Saver};
      Backward = B;
    }
  }
  if (!First)
    return;
  Finding Found;
  Found.Object = L.ObjectNames[Second.Object];
  Found.Function = S.Name;
  Found.Second = L.Sites[Second.Site];
  Found.First = First->first;
  Found.Backward = L.Sites[*Backward];
  const Binding &Bound = L.ObjectBindings[Second.Object];
  Found.Construction = Bound.Constructed;
  Found.ConstructionFile = Bound.File;
  Found.BuffersAssumption = Bound.BuffersAssumption;
  Found.BroadcastKeyword = Bound.BroadcastKeyword;
  Found.BroadcastFix = Bound.BroadcastFix;
  Found.BroadcastWithheld = Bound.BroadcastWithheld;
  Found.SameForwardInALoop = First->second == C.Writer;
  Found.FirstBypasses = L.Graph.forwardOf(First->second).Bypass;
  if (Found.FirstBypasses)
    Found.NoSyncWithheld = "the earlier forward runs on '" + Found.Object +
                           ".module', past DDP: no_sync() around it "
                           "changes nothing, and the later forward still "
                           "broadcasts";
  else if (Found.SameForwardInALoop)
    Found.NoSyncWithheld = "the two forwards are one call in two "
                           "iterations of a loop";
  else
    Found.NoSyncWithheld = F.noSyncFix(
        L.SitePlaces[L.Graph.forwardOf(First->second).Site].Statement,
        L.SitePlaces[Second.Site].Statement,
        L.SitePlaces[L.Graph.forwardOf(First->second).Site].Block,
        L.SitePlaces[Second.Site].Block, Second.GradEnabled, Found.Object,
        Bound, Found.NoSyncFix);
  Result.Findings.push_back(Found);
}

void orderMultipleForwardBeforeBackward(CheckResult &Result) {
  llvm::sort(Result.Findings, [](const Finding &A, const Finding &B) {
    return A.Second < B.Second;
  });
  Result.Findings.erase(
      std::unique(Result.Findings.begin(), Result.Findings.end(),
                  [](const Finding &A, const Finding &B) {
                    return A.Second == B.Second;
                  }),
      Result.Findings.end());
}

} // namespace detail
} // namespace python
} // namespace ddpguard
