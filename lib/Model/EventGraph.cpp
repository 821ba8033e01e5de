//===- EventGraph.cpp -----------------------------------------------------===//

#include "EventGraph.h"
#include "llvm/ADT/STLExtras.h"
#include <cassert>

namespace ddpguard {
namespace model {

Event Event::forward(SiteId Site, ObjectId Object, bool GradEnabled,
                     ValueId Output, llvm::ArrayRef<ValueId> Inputs) {
  Event E{Kind::Forward};
  E.Site = Site;
  E.Object = Object;
  E.GradEnabled = GradEnabled;
  E.Target = Output;
  E.Sources.assign(Inputs.begin(), Inputs.end());
  return E;
}

Event Event::backward(SiteId Site, llvm::ArrayRef<ValueId> Roots,
                      bool RetainGraph, bool CreateGraph) {
  Event E{Kind::Backward};
  E.Site = Site;
  E.RetainGraph = RetainGraph;
  E.CreateGraph = CreateGraph;
  E.Sources.assign(Roots.begin(), Roots.end());
  return E;
}

Event Event::grad(SiteId Site, llvm::ArrayRef<ValueId> Roots, bool RetainGraph,
                  bool CreateGraph, ValueId Gradients) {
  Event E = backward(Site, Roots, RetainGraph, CreateGraph);
  E.ReturnsGradients = true;
  E.Target = Gradients;
  return E;
}

Event Event::derive(ValueId Target, llvm::ArrayRef<ValueId> Sources,
                    bool Strong) {
  Event E{Kind::Derive};
  E.Target = Target;
  E.Strong = Strong;
  E.Sources.assign(Sources.begin(), Sources.end());
  return E;
}

Event Event::ret(SiteId Site, llvm::ArrayRef<ValueId> Sources) {
  Event E{Kind::Return};
  E.Site = Site;
  E.Sources.assign(Sources.begin(), Sources.end());
  return E;
}

Event Event::op(SiteId Site, bool GradEnabled, ValueId Output,
                llvm::ArrayRef<ValueId> Inputs, TensorSetId NewStorage) {
  Event E{Kind::Op};
  E.Site = Site;
  E.GradEnabled = GradEnabled;
  E.Target = Output;
  E.Sources.assign(Inputs.begin(), Inputs.end());
  E.NewStorage = NewStorage;
  return E;
}

Event Event::write(SiteId Site, WriteKind Kind,
                   llvm::ArrayRef<TensorSetId> Sets,
                   llvm::ArrayRef<ValueId> Through, bool Silent) {
  Event E{Kind::Write};
  E.Site = Site;
  E.Writes = Kind;
  E.Silent = Silent;
  E.Sets.assign(Sets.begin(), Sets.end());
  E.Sources.assign(Through.begin(), Through.end());
  return E;
}

EventGraph::EventGraph() : UnknownValue(addValue()) {}

ValueId EventGraph::addInputValue(OriginId &Origin) {
  Origin = NumOrigins++;
  EventOfOrigin.push_back({~0u, ~0u});
  ValueId V = addValue();
  Inputs.push_back({V, Origin});
  return V;
}

ValueId EventGraph::addInputValueOf(OriginId Origin) {
  assert(Origin < NumOrigins && !isForwardOrigin(Origin) &&
         "not an input origin");
  ValueId V = addValue();
  Inputs.push_back({V, Origin});
  return V;
}

ObjectId EventGraph::addObject(ObjectInfo Info) {
  Info.Buffers =
      addTensorSet({TensorSetInfo::Kind::Buffers, Info.Name + "'s buffers"});
  Objects.push_back(std::move(Info));
  return Objects.size() - 1;
}

TensorSetId EventGraph::addTensorSet(TensorSetInfo Info) {
  TensorSets.push_back(std::move(Info));
  return TensorSets.size() - 1;
}

unsigned EventGraph::addBlock() {
  Blocks.emplace_back();
  return Blocks.size() - 1;
}

void EventGraph::addEdge(unsigned From, unsigned To) {
  Blocks[From].Successors.push_back(To);
}

void EventGraph::append(unsigned B, Event E) {
  assert(B < Blocks.size() && "no such block");
  if (E.EventKind == Event::Kind::Forward || E.EventKind == Event::Kind::Op ||
      E.EventKind == Event::Kind::Write) {
    E.Origin = NumOrigins++;
    EventOfOrigin.push_back({B, static_cast<unsigned>(Blocks[B].Events.size())});
  }
  Blocks[B].Events.push_back(std::move(E));
}

EventGraph EventGraph::withoutReadsOf(ValueId V) const {
  EventGraph Copy = *this;
  for (Block &B : Copy.Blocks)
    for (Event &E : B.Events)
      if (!(E.EventKind == Event::Kind::Derive && E.Target == V)) {
        llvm::erase(E.Sources, V);
        for (Save &S : E.Saves)
          llvm::erase(S.IfRequiresGrad, V);
      }
  return Copy;
}

bool EventGraph::isForwardOrigin(OriginId O) const {
  return O < EventOfOrigin.size() && EventOfOrigin[O].first != ~0u &&
         eventOf(O).EventKind == Event::Kind::Forward;
}

bool EventGraph::isOpOrigin(OriginId O) const {
  return O < EventOfOrigin.size() && EventOfOrigin[O].first != ~0u &&
         eventOf(O).EventKind == Event::Kind::Op;
}

bool EventGraph::isWriteOrigin(OriginId O) const {
  return O < EventOfOrigin.size() && EventOfOrigin[O].first != ~0u &&
         eventOf(O).EventKind == Event::Kind::Write;
}

const Event &EventGraph::forwardOf(OriginId O) const {
  assert(isForwardOrigin(O) && "not the origin of a forward");
  return eventOf(O);
}

const Event &EventGraph::eventOf(OriginId O) const {
  assert(O < EventOfOrigin.size() && EventOfOrigin[O].first != ~0u &&
         "origin of an input");
  auto [B, I] = EventOfOrigin[O];
  return Blocks[B].Events[I];
}

std::pair<unsigned, unsigned> EventGraph::eventPosition(OriginId O) const {
  assert(O < EventOfOrigin.size() && EventOfOrigin[O].first != ~0u &&
         "origin of an input");
  return EventOfOrigin[O];
}

} // namespace model
} // namespace ddpguard
