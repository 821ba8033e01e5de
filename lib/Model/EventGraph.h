//===- EventGraph.h - Language-neutral model of a training function -------===//
//
// A frontend turns one function into an EventGraph: basic blocks of events
// (forwards on modules and DDP objects, writes to sets of tensors, backwards
// on values, value derivations) linked by control flow. The hazard analysis
// runs over this graph alone, so it knows nothing of the language the
// function was written in.
//
//===----------------------------------------------------------------------===//

#ifndef DDPGUARD_MODEL_EVENTGRAPH_H
#define DDPGUARD_MODEL_EVENTGRAPH_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ddpguard {
namespace model {

/// A value that can carry autograd history: a variable, a temporary, a
/// container. Values are numbered densely by the frontend.
using ValueId = unsigned;
/// A module or a DDP-wrapped object. Distinct objects never interact except
/// through the tensor sets they share.
using ObjectId = unsigned;
/// A set of tensors with version counters: what a forward saves for backward
/// and what a write bumps.
using TensorSetId = unsigned;
/// An opaque source position the frontend maps back to its own locations.
using SiteId = unsigned;
/// Where history can come from: a forward event, or an input of the function
/// (parameters, for summaries). Origins are numbered densely by the graph.
using OriginId = unsigned;

struct ObjectInfo {
  std::string Name;
  /// DDP broadcasts buffers before each forward (PyTorch's default). False
  /// for a plain module.
  bool BroadcastsBuffers = true;
  /// The wrapped module has (or may have) buffers.
  bool HasBuffers = true;
  /// Buffers are broadcast only at the first grad-mode forward after a
  /// backward reached the module's parameters (ddpguard's
  /// BufferBroadcast::kOncePerBackward), not before every forward.
  bool OncePerBackward = false;
  /// The object's buffers (EventGraph::addObject adds the set): a grad-mode
  /// forward saves them iff HasBuffers, the broadcast writes them.
  TensorSetId Buffers = 0;
};

struct TensorSetInfo {
  enum class Kind {
    /// An object's buffers.
    Buffers,
    /// The parameters of a module (what an optimizer built over them steps).
    Parameters,
    /// Any other tensors the frontend names (one value's storage).
    Tensors,
  };
  Kind SetKind = Kind::Tensors;
  std::string Name;
};

/// A forward or op saves Set for backward if one of IfRequiresGrad may
/// require grad (its history is not empty), or always if the list is empty.
struct Save {
  TensorSetId Set = 0;
  llvm::SmallVector<ValueId, 2> IfRequiresGrad;
  /// Instead of Set: the storage this value points to (see Event::Storage),
  /// read after the event gave its own output its storage.
  std::optional<ValueId> StorageOf;
};

/// The three ways a write comes about; the same words as the runtime
/// explainer's records ("ddp", "optimizer", "inplace").
enum class WriteKind { Broadcast, Step, InPlace };

struct Event {
  enum class Kind {
    /// A forward on Object: Output derives from this forward and from Inputs.
    /// In grad mode it saves Saves, and its object's buffers if it has any.
    Forward,
    /// A differentiable tensor operation outside any module (sigmoid, a
    /// multiplication): Output derives from Inputs, and from this op when it
    /// makes an autograd node, which it does in grad mode when an input may
    /// require grad; the node saves Saves.
    Op,
    /// A backward (or autograd::grad) through the graphs of Sources. With
    /// ReturnsGradients (autograd::grad) the gradients are stored in Target.
    Backward,
    /// Target derives from Sources; Strong replaces Target's history.
    Derive,
    /// The function returns a value derived from Sources.
    Return,
    /// Bumps the version counters of Sets, and of the storage of Sources
    /// (an in-place op on a value), in any grad mode: every live graph of a
    /// forward or op that saved one of them fails if a backward traverses
    /// it later. A DDP broadcast is the write a forward does itself, before
    /// it saves.
    Write,
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
  /// Forward: inside DDP's no_sync(), which leaves the object's
  /// require_forward_param_sync cleared after the forward, as a forward
  /// with grad mode off does, so the next forward does not broadcast.
  bool NoSync = false;
  /// Forward: on the wrapped module itself (model.module(x)), past the
  /// wrapper: it saves the object's buffers as any grad-mode forward does,
  /// but broadcasts nothing and leaves the wrapper's sync state as it was.
  bool Bypass = false;
  /// Forward, Op: what it saves is packed by saved-tensor hooks (activation
  /// checkpointing recomputes it in the backward). Autograd checks no
  /// version counter at unpack, so a write to it, silent or not, makes the
  /// backward read the written values without an error.
  bool SavesUnderHooks = false;
  ValueId Target = 0;
  llvm::SmallVector<ValueId, 4> Sources;
  /// For forwards and writes: the origin that stands for this event.
  OriginId Origin = 0;
  /// Forward: what it saves for backward besides its object's buffers.
  llvm::SmallVector<Save, 1> Saves;
  /// Write: the sets it bumps, and how.
  llvm::SmallVector<TensorSetId, 1> Sets;
  WriteKind Writes = WriteKind::Step;
  /// Write: it leaves the version counters as they were (a fused optimizer
  /// step, a write through .data, one under
  /// _unsafe_preserve_version_counter). It clobbers what was saved all the
  /// same, but the backward raises nothing and reads the written values.
  bool Silent = false;
  /// Storage: the tensor sets a value's storage may be (views and copies of
  /// a tensor handle share theirs). Forward, Op, Derive: Target's storage
  /// becomes NewStorage (a tensor the event makes), else that of StorageOf
  /// (a view or handle copy), else stays as it was. Frontends that do not
  /// follow in-place writes on values leave both unset.
  std::optional<TensorSetId> NewStorage;
  std::optional<ValueId> StorageOf;

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
  static Event write(SiteId Site, WriteKind Kind,
                     llvm::ArrayRef<TensorSetId> Sets,
                     llvm::ArrayRef<ValueId> Through = {},
                     bool Silent = false);
  /// An op with Output's storage NewStorage (see Kind::Op).
  static Event op(SiteId Site, bool GradEnabled, ValueId Output,
                  llvm::ArrayRef<ValueId> Inputs, TensorSetId NewStorage);
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
  /// Adds the object and the set of its buffers.
  ObjectId addObject(ObjectInfo Info);
  TensorSetId addTensorSet(TensorSetInfo Info);
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
  const TensorSetInfo &tensorSet(TensorSetId S) const { return TensorSets[S]; }
  unsigned numTensorSets() const { return TensorSets.size(); }
  unsigned numValues() const { return NumValues; }
  unsigned numOrigins() const { return NumOrigins; }
  /// Origins standing for forwards, ops and writes map to their event;
  /// input origins do not.
  bool isForwardOrigin(OriginId O) const;
  bool isOpOrigin(OriginId O) const;
  bool isWriteOrigin(OriginId O) const;
  const Event &forwardOf(OriginId O) const;
  /// The event of a forward, op or write origin.
  const Event &eventOf(OriginId O) const;
  /// Where a forward or write origin's event is: (block, index in the block).
  std::pair<unsigned, unsigned> eventPosition(OriginId O) const;
  /// The storage an input value starts with.
  void setInputStorage(ValueId V, TensorSetId Storage) {
    InputStorage.push_back({V, Storage});
  }
  llvm::ArrayRef<std::pair<ValueId, TensorSetId>> inputStorage() const {
    return InputStorage;
  }
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
  std::vector<TensorSetInfo> TensorSets;
  std::vector<std::pair<unsigned, unsigned>> EventOfOrigin;
  std::vector<std::pair<ValueId, OriginId>> Inputs;
  std::vector<std::pair<ValueId, TensorSetId>> InputStorage;
  std::vector<ValueId> Escaping;
  unsigned NumValues = 0;
  unsigned NumOrigins = 0;
  unsigned Entry = 0;
  ValueId UnknownValue;
};

} // namespace model
} // namespace ddpguard

#endif
