//===- EventGraph.h - Language-neutral model of a training function -------===//
//
// A frontend turns one function into an EventGraph: basic blocks of events
// (forwards on DDP objects, backwards on values, value derivations) linked by
// control flow. The hazard analysis runs over this graph alone, so it knows
// nothing of the language the function was written in.
//
//===----------------------------------------------------------------------===//

#ifndef DDPGUARD_MODEL_EVENTGRAPH_H
#define DDPGUARD_MODEL_EVENTGRAPH_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include <string>
#include <utility>
#include <vector>

namespace ddpguard {
namespace model {

/// A value that can carry autograd history: a variable, a temporary, a
/// container. Values are numbered densely by the frontend.
using ValueId = unsigned;
/// A DDP-wrapped object. Distinct objects never interact.
using ObjectId = unsigned;
/// An opaque source position the frontend maps back to its own locations.
using SiteId = unsigned;
/// Where history can come from: a forward event, or an input of the function
/// (parameters, for summaries). Origins are numbered densely by the graph.
using OriginId = unsigned;

struct ObjectInfo {
  std::string Name;
  /// DDP broadcasts buffers before each forward (PyTorch's default).
  bool BroadcastsBuffers = true;
  /// The wrapped module has (or may have) buffers.
  bool HasBuffers = true;
  /// Buffers are broadcast only at the first grad-mode forward after a
  /// backward reached the module's parameters (ddpguard's
  /// BufferBroadcast::kOncePerBackward), not before every forward.
  bool OncePerBackward = false;
};

struct Event {
  enum class Kind {
    /// A forward on Object: Output derives from this forward and from Inputs.
    Forward,
    /// A backward (or autograd::grad) through the graphs of Sources. With
    /// ReturnsGradients (autograd::grad) the gradients are stored in Target.
    Backward,
    /// Target derives from Sources; Strong replaces Target's history.
    Derive,
    /// The function returns a value derived from Sources.
    Return,
  };
  Kind EventKind;
  SiteId Site = 0;
  ObjectId Object = 0;
  bool GradEnabled = true;
  bool Strong = false;
  /// Backward: the graphs it traverses survive it (retain_graph).
  bool RetainGraph = false;
  /// Backward: it also builds the gradients' graph (create_graph), whose
  /// nodes read what the traversed graphs saved.
  bool CreateGraph = false;
  bool ReturnsGradients = false;
  ValueId Target = 0;
  llvm::SmallVector<ValueId, 4> Sources;
  /// For forwards: the origin that stands for this forward.
  OriginId Origin = 0;

  static Event forward(SiteId Site, ObjectId Object, bool GradEnabled,
                       ValueId Output, llvm::ArrayRef<ValueId> Inputs);
  static Event backward(SiteId Site, llvm::ArrayRef<ValueId> Roots,
                        bool RetainGraph, bool CreateGraph = false);
  /// autograd::grad: a backward that returns the gradients in Gradients.
  static Event grad(SiteId Site, llvm::ArrayRef<ValueId> Roots,
                    bool RetainGraph, bool CreateGraph, ValueId Gradients);
  static Event derive(ValueId Target, llvm::ArrayRef<ValueId> Sources,
                      bool Strong);
  static Event ret(SiteId Site, llvm::ArrayRef<ValueId> Sources);
};

struct Block {
  std::vector<Event> Events;
  llvm::SmallVector<unsigned, 2> Successors;
};

/// One function as events over a control-flow graph.
class EventGraph {
public:
  EventGraph();

  ValueId addValue() { return NumValues++; }
  /// A value whose history is unknown: a backward through it is assumed to
  /// traverse every live graph (the safe side).
  ValueId unknownValue() const { return UnknownValue; }
  /// A value that starts with its own origin (a parameter, for summaries).
  ValueId addInputValue(OriginId &Origin);
  /// A value that starts with the history of an existing input origin.
  ValueId addInputValueOf(OriginId Origin);
  ObjectId addObject(ObjectInfo Info);
  unsigned addBlock();
  void addEdge(unsigned From, unsigned To);
  /// Appends E to block B; forwards get their origin here.
  void append(unsigned B, Event E);

  unsigned entry() const { return Entry; }
  void setEntry(unsigned B) { Entry = B; }

  llvm::ArrayRef<Block> blocks() const { return Blocks; }
  const ObjectInfo &object(ObjectId O) const { return Objects[O]; }
  /// For asking what a different buffer policy would change.
  ObjectInfo &object(ObjectId O) { return Objects[O]; }
  unsigned numObjects() const { return Objects.size(); }
  unsigned numValues() const { return NumValues; }
  unsigned numOrigins() const { return NumOrigins; }
  /// Origins standing for forwards map to their event; input origins do not.
  bool isForwardOrigin(OriginId O) const;
  const Event &forwardOf(OriginId O) const;
  /// Where a forward origin's event is: (block, index in the block).
  std::pair<unsigned, unsigned> forwardPosition(OriginId O) const;
  /// Input values with their origins, in the order they were added.
  llvm::ArrayRef<std::pair<ValueId, OriginId>> inputs() const { return Inputs; }
  /// A value that outlives the function (a member, a global): its history
  /// stays of interest where the function exits. Inputs always are.
  void markEscaping(ValueId V) { Escaping.push_back(V); }
  llvm::ArrayRef<ValueId> escaping() const { return Escaping; }
  /// A copy in which no event reads V except a derivation into V itself:
  /// the function as if V's history never came back out of it.
  EventGraph withoutReadsOf(ValueId V) const;

private:
  std::vector<Block> Blocks;
  std::vector<ObjectInfo> Objects;
  std::vector<std::pair<unsigned, unsigned>> ForwardOfOrigin;
  std::vector<std::pair<ValueId, OriginId>> Inputs;
  std::vector<ValueId> Escaping;
  unsigned NumValues = 0;
  unsigned NumOrigins = 0;
  unsigned Entry = 0;
  ValueId UnknownValue;
};

} // namespace model
} // namespace ddpguard

#endif
