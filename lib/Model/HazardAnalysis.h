//===- HazardAnalysis.h - Forwards that clobber saved buffers -------------===//
//
// The rule (DESIGN.md §1): a backward fails iff it traverses the graph of a
// grad-mode forward F1 on a DDP object D, and a later forward F2 on D ran
// (in any grad mode) while D broadcasts buffers and has buffers.
//
// The analysis is a forward may-dataflow over an EventGraph. Its state is the
// provenance of each value (which origins its history comes from), the set of
// forwards whose graph is still live, and for each live forward the forwards
// that broadcast after it. A backward through a clobbered live forward is a
// hazard.
//
// A value no later event reads is dropped from the state, and so is a forward
// no remaining value derives from: no backward can reach its graph any more.
// This keeps the state proportional to what is live, so long functions are
// analysed in near-linear time.
//
//===----------------------------------------------------------------------===//

#ifndef DDPGUARD_MODEL_HAZARDANALYSIS_H
#define DDPGUARD_MODEL_HAZARDANALYSIS_H

#include "EventGraph.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallBitVector.h"
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
  bool RetainGraph;
  /// The backward went through a value of unknown history.
  bool ThroughUnknown;
};

struct AnalysisResult {
  /// Sorted by second forward, then first forward, then backward; no
  /// duplicates.
  std::vector<Hazard> Hazards;
  /// Origins that flow into a returned value.
  llvm::SmallBitVector ReturnedOrigins;
  std::vector<BackwardUse> Backwards;
  /// Provenance of the inputs and escaping values where the function exits.
  llvm::DenseMap<ValueId, llvm::SmallBitVector> ExitProvenance;
};

AnalysisResult analyzeHazards(const EventGraph &Graph);

} // namespace model
} // namespace ddpguard

#endif
