//===- SilentWriteBeforeBackward.cpp --------------------------------------===//
//
// silent-write-before-backward: a silent write's clobber to its
// SilentWriteFinding.
//
//===----------------------------------------------------------------------===//

#include "../Lowering.h"

namespace ddpguard {
namespace python {
namespace detail {

void Lowering::findSilentWriteBeforeBackward(const AnalysisResult &R,
                                             const Clobber &C,
                                             CheckResult &Result) {
  if (!Graph.isWriteOrigin(C.Writer) || !C.Silent)
    return;
  auto Silent = SilentWrites.find(Graph.eventOf(C.Writer).Site);
  if (Silent == SilentWrites.end())
    return;
  const SilentWrite &Write = Silent->second;
  // The earliest saver in the file with a backward through it; a write to
  // parameters counts only backwards of the scope's own code, as a step.
  bool OnValue = Write.OnValue;
  std::optional<std::pair<Position, SiteId>> First;
  std::optional<SiteId> Backward;
  for (OriginId Saver : C.Savers) {
    SiteId Site = Graph.eventOf(Saver).Site;
    if (OnValue && !SavingOps.count(Site))
      continue;
    Position At = Sites[Site];
    if (First && !(At < First->first))
      continue;
    std::optional<SiteId> B = R.firstBackward(Saver, C.Writer);
    if (B && (OnValue || !ResultBackwards.count(*B))) {
      First = {At, Site};
      Backward = B;
    }
  }
  if (!First)
    return;
  SilentWriteFinding Found;
  Found.WrittenBy = Write.WrittenBy;
  Found.Operation = Write.Operation;
  Found.Tensor = Write.Tensor;
  Found.Module = Write.Module;
  if (auto Op = SavingOps.find(First->second); Op != SavingOps.end()) {
    StringRef Saver = F.text(Op->second);
    Found.Saver = saverName(Saver, (Saver + "(...)").str());
  }
  Found.Write = Sites[Graph.eventOf(C.Writer).Site];
  Found.Saved = First->first;
  Found.Backward = Sites[*Backward];
  Found.ThroughResult = ResultBackwards.count(*Backward);
  std::string Line = std::to_string(Found.Backward.Line);
  Found.FixWithheld =
      Write.WrittenBy == SilentWriteFinding::Way::FusedStep ||
              Write.WrittenBy == SilentWriteFinding::Way::CheckpointedStep
          ? "moving the step after the backward at line " + Line +
                " would make it use that backward's gradients too, and "
                "recomputing the forward after the step would change what "
                "the later loss sees; both change what training computes"
          : "moving the write after the backward at line " + Line +
                " changes what the code between them reads, and a write "
                "that bumps the version counter would make that backward "
                "fail instead";
  Result.SilentWrites.push_back(std::move(Found));
}

void orderSilentWriteBeforeBackward(CheckResult &Result) {
  llvm::sort(Result.SilentWrites,
             [](const SilentWriteFinding &A, const SilentWriteFinding &B) {
               return A.Write < B.Write;
             });
  Result.SilentWrites.erase(
      std::unique(Result.SilentWrites.begin(), Result.SilentWrites.end(),
                  [](const SilentWriteFinding &A, const SilentWriteFinding &B) {
                    return A.Write == B.Write;
                  }),
      Result.SilentWrites.end());
}

} // namespace detail
} // namespace python
} // namespace ddpguard
