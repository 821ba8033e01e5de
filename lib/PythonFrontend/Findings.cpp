//===- Findings.cpp - clobbers to findings ----------------------------------===//

#include "Lowering.h"
#include "llvm/ADT/StringExtras.h"

namespace ddpguard {
namespace python {
namespace detail {

using namespace model;
using llvm::StringRef;

/// A saving operation as a message names it: one that spans lines or runs
/// long by its function (`torch.einsum(...)`), else Uncalled.
static std::string saverName(StringRef Saver, const std::string &Uncalled) {
  if (!Saver.contains('\n') && Saver.size() <= 60)
    return Saver.str();
  if (!Saver.contains('('))
    return Uncalled;
  return (Saver.take_until([](char C) { return C == '('; }) + "(...)").str();
}

void Lowering::reportValueWrite(const AnalysisResult &R, const Clobber &C,
                                const ValueWrite &Write, CheckResult &Result) {
  Lowering &L = *this;
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

void Lowering::reportSilentWrite(const AnalysisResult &R, const Clobber &C,
                                 const SilentWrite &Write,
                                 CheckResult &Result) {
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

void Frontend::analyse(Scope &S, CheckResult &Result) {
  Lowering L(*this, S);
  L.run();
  if (L.ObjectNames.empty() && L.ValueWrites.empty() &&
      L.SilentWrites.empty())
    return;
  AnalysisOptions Analysis;
  Analysis.ListHazards = false;
  AnalysisResult R = analyzeHazards(L.Graph, Analysis);
  // The first backward through Saver after Writer; the backwards a module's
  // forward appends at its returns count for value writes only.
  auto FirstBackward = [&](OriginId Saver, OriginId Writer,
                           bool ResultsToo) -> std::optional<SiteId> {
    std::optional<SiteId> B = R.firstBackward(Saver, Writer);
    if (B && !ResultsToo && L.ResultBackwards.count(*B))
      return std::nullopt;
    return B;
  };
  for (const Clobber &C : R.Clobbers) {
    if (L.Graph.isWriteOrigin(C.Writer)) {
      const Event &Write = L.Graph.eventOf(C.Writer);
      // A silent write is its own check's, never a loud one's.
      if (C.Silent) {
        if (auto Silent = L.SilentWrites.find(Write.Site);
            Silent != L.SilentWrites.end())
          L.reportSilentWrite(R, C, Silent->second, Result);
        continue;
      }
      if (auto Value = L.ValueWrites.find(Write.Site);
          Value != L.ValueWrites.end()) {
        L.reportValueWrite(R, C, Value->second, Result);
        continue;
      }
      auto Step = L.Steps.find(Write.Site);
      if (Step == L.Steps.end())
        continue;
      std::optional<std::pair<Position, SiteId>> First;
      OriginId FirstSaver{};
      for (OriginId Saver : C.Savers) {
        Position At = L.Sites[L.Graph.forwardOf(Saver).Site];
        if (First && !(At < First->first))
          continue;
        if (std::optional<SiteId> B = FirstBackward(Saver, C.Writer, false)) {
          First = {At, *B};
          FirstSaver = Saver;
        }
      }
      if (!First)
        continue;
      // All three inside one call of a function of the run: the function's
      // own hazard, reported where it is written.
      const void *From = L.InlinedFrom.lookup(Write.Site);
      if (From &&
          L.InlinedFrom.lookup(L.Graph.forwardOf(FirstSaver).Site) == From &&
          L.InlinedFrom.lookup(First->second) == From)
        continue;
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
      continue;
    }
    // A broadcast over what a checkpointed forward saved: not followed.
    if (!L.Graph.isForwardOrigin(C.Writer) || C.Silent)
      continue;
    const Event &Second = L.Graph.forwardOf(C.Writer);
    // The earliest saver in the file, with its first failing backward.
    std::optional<std::pair<Position, OriginId>> First;
    std::optional<SiteId> Backward;
    for (OriginId Saver : C.Savers) {
      Position At = L.Sites[L.Graph.forwardOf(Saver).Site];
      if (First && !(At < First->first))
        continue;
      if (std::optional<SiteId> B = FirstBackward(Saver, C.Writer, false)) {
        First = {At, Saver};
        Backward = B;
      }
    }
    if (!First)
      continue;
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
      Found.NoSyncWithheld = noSyncFix(
          L.SitePlaces[L.Graph.forwardOf(First->second).Site].Statement,
          L.SitePlaces[Second.Site].Statement,
          L.SitePlaces[L.Graph.forwardOf(First->second).Site].Block,
          L.SitePlaces[Second.Site].Block, Second.GradEnabled, Found.Object,
          Bound, Found.NoSyncFix);
    Result.Findings.push_back(Found);
  }
}

} // namespace detail
} // namespace python
} // namespace ddpguard
