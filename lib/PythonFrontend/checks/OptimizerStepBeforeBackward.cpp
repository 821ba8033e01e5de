//===- OptimizerStepBeforeBackward.cpp ------------------------------------===//
//
// optimizer-step-before-backward: a step's clobber to its StepFinding.
//
//===----------------------------------------------------------------------===//

#include "../Lowering.h"
#include "llvm/ADT/StringExtras.h"

namespace ddpguard {
namespace python {
namespace detail {

void Lowering::findOptimizerStepBeforeBackward(const AnalysisResult &R,
                                               const Clobber &C,
                                               CheckResult &Result) {
  Lowering &L = *this;
  // A silent step (fused=True) is silent-write-before-backward's.
  if (!L.Graph.isWriteOrigin(C.Writer) || C.Silent)
    return;
  const Event &Write = L.Graph.eventOf(C.Writer);
  auto Step = L.Steps.find(Write.Site);
  if (Step == L.Steps.end())
    return;
  std::optional<std::pair<Position, SiteId>> First;
  OriginId FirstSaver{};
  for (OriginId Saver : C.Savers) {
    Position At = L.Sites[L.Graph.forwardOf(Saver).Site];
    if (First && !(At < First->first))
      continue;
    if (std::optional<SiteId> B = firstOwnBackward(R, Saver, C.Writer)) {
      First = {At, *B};
      FirstSaver = Saver;
    }
  }
  if (!First)
    return;
  // All three inside one call of a function of the run: the function's
  // own hazard, reported where it is written.
  const void *From = L.InlinedFrom.lookup(Write.Site);
  if (From &&
      L.InlinedFrom.lookup(L.Graph.forwardOf(FirstSaver).Site) == From &&
      L.InlinedFrom.lookup(First->second) == From)
    return;
  StepFinding Found;
  Found.Optimizer = Step->second.first;
  Found.OptimizerClass = Step->second.second.Class;
  std::vector<std::string> Names;
  for (const std::string &Key : Step->second.second.ParametersOf)
    Names.push_back(displayName(Key));
  Found.Module = llvm::join(Names, ", ");
  Found.Assumed = Step->second.second.Assumed;
  Found.Step = L.Sites[Write.Site];
  Found.Forward = First->first;
  Found.Backward = L.Sites[First->second];
  Result.Steps.push_back(Found);
}

void orderOptimizerStepBeforeBackward(CheckResult &Result) {
  llvm::sort(Result.Steps, [](const StepFinding &A, const StepFinding &B) {
    return A.Step < B.Step;
  });
  Result.Steps.erase(std::unique(Result.Steps.begin(), Result.Steps.end(),
                                 [](const StepFinding &A, const StepFinding &B) {
                                   return A.Step == B.Step;
                                 }),
                     Result.Steps.end());
}

} // namespace detail
} // namespace python
} // namespace ddpguard
