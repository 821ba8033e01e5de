//===- HazardAnalysis.h - Forwards that clobber saved buffers -------------===//
//
// The rule (docs/ground-truth.md): a backward fails iff it traverses the
// graph of a grad-mode forward F1 on a DDP object D, and a later forward F2 on
// D ran (in any grad mode) while D broadcasts buffers and has buffers, and
// F2 syncs: the forward on D before F2 (if any) ran in grad mode (it set
// require_forward_param_sync; one with grad mode off clears it). This is a
// may-property per object: F2 syncs if one way to it leaves the flag set.
//
// The analysis is a forward may-dataflow over an EventGraph whose state is
// the provenance of each value (which origins its history comes from) and
// the forwards whose graph is still live. A live graph dies at a backward
// through it (unless the graph is retained, or the backward creates the
// gradients' graph, which reads what it saved), or where no live value derives
// from it any more: a value no later event reads is dropped, and so is a
// forward no remaining value derives from. This keeps the state proportional
// to what is live. The gradients autograd::grad returns derive from the
// roots' graphs with create_graph, and from nothing without it.
//
// F2 clobbers F1 when F1's graph is live (and F1 on F2's object) just before
// F2; the pair fails at each later backward that traverses F1's graph before
// it dies. The pairs can be quadratic in number, so they are never carried
// in the state: a backward pass finds the forwards whose graph a later
// backward traverses ("anticipated"), and F2's first forwards are those live
// before it and anticipated after it. Each pass costs the graph's size times
// a set of origins (see HazardAnalysis.cpp for how the visits of the fixed
// point iteration are replayed), so long functions with many branches or
// deeply nested loops are analysed in near-linear time. The hazard triples
// are listed only on request; a caller that names one first forward per
// second forward asks for that pair's first backward alone.
//
//===----------------------------------------------------------------------===//

#ifndef DDPGUARD_MODEL_HAZARDANALYSIS_H
#define DDPGUARD_MODEL_HAZARDANALYSIS_H

#include "EventGraph.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/ADT/SparseBitVector.h"
#include <memory>
#include <optional>
#include <vector>

namespace ddpguard {
namespace model {

struct Hazard {
  OriginId FirstForward;
  OriginId SecondForward;
  /// The backward that traverses the first forward's graph.
  SiteId Backward;
};

struct BackwardUse {
  SiteId Site;
  /// Origins whose graphs this backward traverses.
  llvm::SmallBitVector Origins;
  /// The graphs it traverses survive it (retain_graph or create_graph).
  bool RetainGraph;
  /// The backward went through a value of unknown history.
  bool ThroughUnknown;
};

/// A forward that broadcasts while earlier forwards' graphs are live, and a
/// later backward traverses them: every (first, SecondForward) pair fails.
struct Clobber {
  OriginId SecondForward;
  llvm::SparseBitVector<> FirstForwards;
};

struct AnalysisOptions {
  /// Fill AnalysisResult::Hazards: every (first, second, backward) triple.
  /// Their number can grow with the square of the function's forwards.
  bool ListHazards = true;
};

class BackwardIndex;

struct AnalysisResult {
  AnalysisResult();
  AnalysisResult(AnalysisResult &&);
  AnalysisResult &operator=(AnalysisResult &&);
  ~AnalysisResult();

  /// With AnalysisOptions::ListHazards: sorted by second forward, then first
  /// forward, then backward; no duplicates.
  std::vector<Hazard> Hazards;
  /// Sorted by second forward; each second forward once.
  std::vector<Clobber> Clobbers;
  /// Origins that flow into a returned value.
  llvm::SmallBitVector ReturnedOrigins;
  std::vector<BackwardUse> Backwards;
  /// Provenance of the inputs and escaping values where the function exits.
  llvm::DenseMap<ValueId, llvm::SmallBitVector> ExitProvenance;

  /// The backwards through which (First, Second) fails, ascending: those
  /// reachable from Second while First's graph stays live that traverse it.
  /// Empty unless First is among Second's clobbered first forwards.
  std::vector<SiteId> backwardsThrough(OriginId First, OriginId Second) const;
  /// The smallest of backwardsThrough(First, Second) that Skip (if given)
  /// does not reject. Without Skip this is memoised per first forward, so
  /// asking it for many second forwards costs about one pass over the part
  /// of the graph where First's graph is live.
  std::optional<SiteId>
  firstBackward(OriginId First, OriginId Second,
                llvm::function_ref<bool(SiteId)> Skip = nullptr) const;

private:
  friend class HazardAnalyzer;
  std::unique_ptr<BackwardIndex> Index;
};

AnalysisResult analyzeHazards(const EventGraph &Graph,
                              AnalysisOptions Options = {});

} // namespace model
} // namespace ddpguard

#endif
