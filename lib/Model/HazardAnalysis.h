//===- HazardAnalysis.h - Writes that clobber what a forward saved --------===//
//
// The rule (docs/ground-truth.md): a backward fails iff it traverses the
// graph of a grad-mode forward F1 that saved a tensor T, and T was written
// (its version counter bumped) after F1 ran. F1 is the saver, the write's
// event the writer. A write is a Write event (an optimizer step, an
// in-place op) or a DDP broadcast, which a forward F2 on a DDP object D does
// before it runs: F1 on D saved D's buffers if D has buffers, and F2 writes
// them (in any grad mode) while D broadcasts buffers and F2 syncs: the
// forward on D before F2 (if any) ran in grad mode (it set
// require_forward_param_sync; one with grad mode off clears it). This is a
// may-property per object: F2 syncs if one way to it leaves the flag set.
// What a forward saves may hang on whether an input requires grad; an input
// may iff its history is not empty (or unknown).
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
// A silent write (one that leaves the version counters as they were: a fused
// step, a write through .data) clobbers exactly as a write that bumps them;
// only what the backward then does differs, which Clobber::Silent says.
//
// W clobbers F1 when F1's graph is live and F1 saved a set W writes just
// before W; the pair fails at each later backward that traverses F1's graph
// before it dies. The pairs can be quadratic in number, so they are never carried
// in the state: a backward pass finds the forwards whose graph a later
// backward traverses ("anticipated"), and W's savers are those live and
// saving what it writes before it and anticipated after it. Each pass costs the graph's size times
// a set of origins (see HazardAnalysis.cpp for how the visits of the fixed
// point iteration are replayed), so long functions with many branches or
// deeply nested loops are analysed in near-linear time. The hazard triples
// are listed only on request; a caller that names one saver per writer asks
// for that pair's first backward alone.
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
  /// The forward whose saved tensor was written.
  OriginId Saver;
  /// The write: a Write event, or a forward's DDP broadcast.
  OriginId Writer;
  /// The backward that traverses the saver's graph.
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

/// A write while graphs of forwards that saved what it writes are live, and
/// a later backward traverses them: every (saver, Writer) pair fails.
/// A silent writer (Event::Silent) clobbers the same savers; the backward
/// then raises nothing and computes from the written values. So does any
/// writer of savers that save under hooks (Event::SavesUnderHooks): a
/// writer's clobber is split in two, the loud savers and the silent ones.
struct Clobber {
  OriginId Writer;
  llvm::SparseBitVector<> Savers;
  bool Silent = false;
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

  /// With AnalysisOptions::ListHazards: sorted by writer, then saver, then
  /// backward; no duplicates.
  std::vector<Hazard> Hazards;
  /// Sorted by writer; each writer once.
  std::vector<Clobber> Clobbers;
  /// Origins that flow into a returned value.
  llvm::SmallBitVector ReturnedOrigins;
  std::vector<BackwardUse> Backwards;
  /// Provenance of the inputs and escaping values where the function exits.
  llvm::DenseMap<ValueId, llvm::SmallBitVector> ExitProvenance;

  /// The backwards through which (Saver, Writer) fails, ascending: those
  /// reachable from Writer while Saver's graph stays live that traverse it.
  /// Empty unless Saver is among Writer's clobbered savers.
  std::vector<SiteId> backwardsThrough(OriginId Saver, OriginId Writer) const;
  /// The smallest of backwardsThrough(Saver, Writer) that Skip (if given)
  /// does not reject. Without Skip this is memoised per saver, so asking it
  /// for many writers costs about one pass over the part of the graph where
  /// Saver's graph is live.
  std::optional<SiteId>
  firstBackward(OriginId Saver, OriginId Writer,
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
