//===- HazardAnalysisTest.cpp - The rule of DESIGN.md §1 on event graphs --===//

#include "Model/HazardAnalysis.h"
#include "gtest/gtest.h"

using namespace ddpguard::model;

namespace {

/// Builds straight-line or looping graphs with readable steps.
class GraphBuilder {
public:
  explicit GraphBuilder(ObjectInfo Info = {"D", true, true}) {
    D = G.addObject(Info);
    Block = G.addBlock();
    G.setEntry(Block);
  }
  ValueId forward(bool Grad = true, ObjectId On = ~0u) {
    ValueId Out = G.addValue();
    G.append(Block, Event::forward(NextSite++, On == ~0u ? D : On, Grad, Out, {}));
    return Out;
  }
  void backward(std::initializer_list<ValueId> Roots, bool Retain = false) {
    G.append(Block, Event::backward(NextSite++, Roots, Retain));
  }
  ValueId combine(std::initializer_list<ValueId> Sources) {
    ValueId V = G.addValue();
    G.append(Block, Event::derive(V, Sources, true));
    return V;
  }
  ValueId detached() { return G.addValue(); }
  /// Starts a loop body; endLoop() closes it with a back edge.
  void beginLoop() {
    unsigned Body = G.addBlock();
    G.addEdge(Block, Body);
    LoopHead = Block = Body;
  }
  void endLoop() {
    unsigned Exit = G.addBlock();
    G.addEdge(Block, LoopHead);
    G.addEdge(Block, Exit);
    Block = Exit;
  }
  AnalysisResult run() { return analyzeHazards(G); }

  EventGraph G;
  ObjectId D;
  unsigned Block;
  unsigned LoopHead = 0;
  SiteId NextSite = 0;
};

TEST(HazardAnalysis, TwoForwardsThenBackwardOfBothIsAnError) {
  GraphBuilder B;
  ValueId O1 = B.forward(), O2 = B.forward();
  B.backward({B.combine({O1, O2})});
  AnalysisResult R = B.run();
  ASSERT_EQ(R.Hazards.size(), 1u);
  EXPECT_EQ(B.G.forwardOf(R.Hazards[0].FirstForward).Site, 0u);
  EXPECT_EQ(B.G.forwardOf(R.Hazards[0].SecondForward).Site, 1u);
}

TEST(HazardAnalysis, NoBroadcastOrNoBuffersIsOk) {
  for (ObjectInfo Info : {ObjectInfo{"D", false, true}, ObjectInfo{"D", true, false}}) {
    GraphBuilder B(Info);
    ValueId O1 = B.forward(), O2 = B.forward();
    B.backward({O1, O2});
    EXPECT_TRUE(B.run().Hazards.empty());
  }
}

TEST(HazardAnalysis, SecondForwardUnderNoGradStillClobbers) {
  GraphBuilder B;
  ValueId O1 = B.forward();
  B.forward(/*Grad=*/false);
  B.backward({O1});
  EXPECT_EQ(B.run().Hazards.size(), 1u);
}

TEST(HazardAnalysis, FirstForwardUnderNoGradIsOk) {
  GraphBuilder B;
  B.forward(/*Grad=*/false);
  ValueId O2 = B.forward();
  B.backward({O2});
  EXPECT_TRUE(B.run().Hazards.empty());
}

TEST(HazardAnalysis, BackwardOfSecondOnlyIsOk) {
  GraphBuilder B;
  B.forward();
  ValueId O2 = B.forward();
  B.backward({O2}, /*Retain=*/true);
  EXPECT_TRUE(B.run().Hazards.empty());
}

TEST(HazardAnalysis, ForwardBackwardForwardBackwardIsOk) {
  GraphBuilder B;
  B.backward({B.forward()});
  B.backward({B.forward()});
  EXPECT_TRUE(B.run().Hazards.empty());
}

TEST(HazardAnalysis, DetachCutsTheFirstGraph) {
  GraphBuilder B;
  B.forward();
  ValueId O1 = B.detached();
  ValueId O2 = B.forward();
  B.backward({O1, O2});
  EXPECT_TRUE(B.run().Hazards.empty());
}

TEST(HazardAnalysis, DistinctObjectsNeverInteract) {
  GraphBuilder B;
  ObjectId Other = B.G.addObject({"E", true, true});
  ValueId O1 = B.forward(true, B.D), O2 = B.forward(true, Other);
  B.backward({O1, O2});
  EXPECT_TRUE(B.run().Hazards.empty());
}

TEST(HazardAnalysis, LoopAccumulatingBeforeOneBackwardIsAnError) {
  GraphBuilder B;
  ValueId Loss = B.G.addValue();
  B.beginLoop();
  ValueId Out = B.forward();
  B.G.append(B.Block, Event::derive(Loss, {Out}, /*Strong=*/false));
  B.endLoop();
  B.backward({Loss});
  AnalysisResult R = B.run();
  ASSERT_EQ(R.Hazards.size(), 1u);
  EXPECT_EQ(R.Hazards[0].FirstForward, R.Hazards[0].SecondForward);
}

TEST(HazardAnalysis, LoopWithBackwardEachIterationIsOk) {
  GraphBuilder B;
  B.beginLoop();
  B.backward({B.forward()});
  B.endLoop();
  EXPECT_TRUE(B.run().Hazards.empty());
}

TEST(HazardAnalysis, UnknownHistoryIsAssumedToReachLiveGraphs) {
  GraphBuilder B;
  B.forward();
  B.forward();
  B.backward({B.G.unknownValue()});
  EXPECT_EQ(B.run().Hazards.size(), 1u);
}

TEST(HazardAnalysis, BranchesJoin) {
  // if (c) o = D(a); else o = D(b); D(c); backward(o): both paths error.
  EventGraph G;
  ObjectId D = G.addObject({"D", true, true});
  unsigned Entry = G.addBlock(), Then = G.addBlock(), Else = G.addBlock(),
           Join = G.addBlock();
  G.setEntry(Entry);
  G.addEdge(Entry, Then);
  G.addEdge(Entry, Else);
  G.addEdge(Then, Join);
  G.addEdge(Else, Join);
  ValueId O = G.addValue(), T = G.addValue(), E = G.addValue(), C = G.addValue();
  G.append(Then, Event::forward(0, D, true, T, {}));
  G.append(Then, Event::derive(O, {T}, true));
  G.append(Else, Event::forward(1, D, true, E, {}));
  G.append(Else, Event::derive(O, {E}, true));
  G.append(Join, Event::forward(2, D, true, C, {}));
  G.append(Join, Event::backward(3, {O}, false));
  EXPECT_EQ(analyzeHazards(G).Hazards.size(), 2u);
}

TEST(HazardAnalysis, OneForwardPerBranchIsOk) {
  EventGraph G;
  ObjectId D = G.addObject({"D", true, true});
  unsigned Entry = G.addBlock(), Then = G.addBlock(), Else = G.addBlock(),
           Join = G.addBlock();
  G.setEntry(Entry);
  G.addEdge(Entry, Then);
  G.addEdge(Entry, Else);
  G.addEdge(Then, Join);
  G.addEdge(Else, Join);
  ValueId O = G.addValue(), T = G.addValue(), E = G.addValue();
  G.append(Then, Event::forward(0, D, true, T, {}));
  G.append(Then, Event::derive(O, {T}, true));
  G.append(Else, Event::forward(1, D, true, E, {}));
  G.append(Else, Event::derive(O, {E}, true));
  G.append(Join, Event::backward(2, {O}, false));
  EXPECT_TRUE(analyzeHazards(G).Hazards.empty());
}

TEST(HazardAnalysis, ReturnedOriginsAndInputsAreTracked) {
  EventGraph G;
  ObjectId D = G.addObject({"D", true, true});
  unsigned B = G.addBlock();
  G.setEntry(B);
  OriginId Param;
  ValueId Input = G.addInputValue(Param);
  ValueId Out = G.addValue();
  G.append(B, Event::forward(0, D, true, Out, {Input}));
  G.append(B, Event::ret(1, {Out}));
  G.append(B, Event::backward(2, {Input}, false));
  AnalysisResult R = analyzeHazards(G);
  EXPECT_TRUE(R.ReturnedOrigins.test(Param));
  ASSERT_EQ(R.Backwards.size(), 1u);
  EXPECT_TRUE(R.Backwards[0].Origins.test(Param));
  EXPECT_FALSE(R.Backwards[0].ThroughUnknown);
}

} // namespace
