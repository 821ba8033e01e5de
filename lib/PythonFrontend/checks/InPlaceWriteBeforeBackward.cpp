//===- InPlaceWriteBeforeBackward.cpp -------------------------------------===//
//
// inplace-write-before-backward: an in-place write's clobber to its
// ValueWriteFinding.
//
//===----------------------------------------------------------------------===//

#include "../Lowering.h"
#include "llvm/ADT/STLExtras.h"

namespace ddpguard {
namespace python {
namespace detail {

void Lowering::findInPlaceWriteBeforeBackward(const AnalysisResult &R,
                                              const Clobber &C,
                                              CheckResult &Result) {
  Lowering &L = *this;
  // A silent write is silent-write-before-backward's, never this check's.
  if (!L.Graph.isWriteOrigin(C.Writer) || C.Silent)
    return;
  auto Value = L.ValueWrites.find(L.Graph.eventOf(C.Writer).Site);
  if (Value == L.ValueWrites.end())
    return;
  const ValueWrite &Write = Value->second;
  // The earliest saving operation in the file, with its first failing
  // backward.
  std::optional<std::pair<Position, SiteId>> First;
  std::optional<SiteId> Backward;
  for (OriginId Saver : C.Savers) {
    SiteId Site = L.Graph.eventOf(Saver).Site;
    if (!L.SavingOps.count(Site))
      continue;
    Position At = L.Sites[Site];
    if (First && !(At < First->first))
      continue;
    if (std::optional<SiteId> B = R.firstBackward(Saver, C.Writer)) {
      First = {At, Site};
      Backward = B;
    }
  }
  if (!First)
    return;
  ValueWriteFinding Found;
  Found.Operation = Write.Operation;
  Found.Tensor = F.text(Write.Tensor).str();
  Found.Saver = saverName(F.text(L.SavingOps.at(First->second)),
                          "an operation");
  Found.Write = L.Sites[L.Graph.eventOf(C.Writer).Site];
  Found.Saved = First->first;
  Found.Backward = L.Sites[*Backward];
  Found.ThroughResult = L.ResultBackwards.count(*Backward);
  for (const CarriedState &State : L.Carried)
    if (Found.ThroughResult && llvm::is_contained(State.Names, Found.Tensor))
      Found.CarriedState = State.Parameter;
  Found.FixWithheld = L.outOfPlaceFix(Write, Found.Fix);
  Result.ValueWrites.push_back(std::move(Found));
}

void orderInPlaceWriteBeforeBackward(CheckResult &Result) {
  llvm::sort(Result.ValueWrites,
             [](const ValueWriteFinding &A, const ValueWriteFinding &B) {
               return A.Write < B.Write;
             });
}

} // namespace detail
} // namespace python
} // namespace ddpguard
