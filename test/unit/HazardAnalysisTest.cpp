//===- HazardAnalysisTest.cpp - The rule of docs/ground-truth.md ----------===//

#include "Model/HazardAnalysis.h"
#include "gtest/gtest.h"
#include <random>
#include <set>
#include <tuple>

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
  /// autograd::grad of Roots; returns the gradients.
  ValueId grad(std::initializer_list<ValueId> Roots, bool Retain, bool Create) {
    ValueId Gradients = G.addValue();
    G.append(Block, Event::grad(NextSite++, Roots, Retain, Create, Gradients));
    return Gradients;
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
  EXPECT_EQ(B.G.forwardOf(R.Hazards[0].Saver).Site, 0u);
  EXPECT_EQ(B.G.forwardOf(R.Hazards[0].Writer).Site, 1u);
}

TEST(HazardAnalysis, NoBroadcastOrNoBuffersIsOk) {
  for (ObjectInfo Info : {ObjectInfo{"D", false, true}, ObjectInfo{"D", true, false}}) {
    GraphBuilder B(Info);
    ValueId O1 = B.forward(), O2 = B.forward();
    B.backward({O1, O2});
    EXPECT_TRUE(B.run().Hazards.empty());
  }
}

/// Once per backward (BufferBroadcast::kOncePerBackward): only the first
/// grad-mode forward after a backward broadcasts.
static const ObjectInfo OncePerBackward{"D", true, true, true};

TEST(HazardAnalysisOncePerBackward, LaterForwardsBeforeTheBackwardAreOk) {
  GraphBuilder B(OncePerBackward);
  ValueId O1 = B.forward(), O2 = B.forward(), O3 = B.forward();
  B.backward({B.combine({O1, O2, O3})});
  EXPECT_TRUE(B.run().Hazards.empty());
}

TEST(HazardAnalysisOncePerBackward, ForwardAfterABackwardOverARetainedGraph) {
  // fake = D(x); fake.backward(retain); real = D(y); fake.backward():
  // the forward after the backward broadcasts over fake's retained graph.
  GraphBuilder B(OncePerBackward);
  ValueId Fake = B.forward();
  B.backward({Fake}, /*Retain=*/true);
  B.forward();
  B.backward({Fake});
  AnalysisResult R = B.run();
  ASSERT_EQ(R.Hazards.size(), 1u);
  EXPECT_EQ(B.G.forwardOf(R.Hazards[0].Writer).Site, 2u);
}

TEST(HazardAnalysisOncePerBackward, GradAccumulatesNothingSoDoesNotRearm) {
  // A gradient penalty: autograd::grad reaches no parameter's accumulator,
  // so the forward after it reuses the buffers it had.
  GraphBuilder B(OncePerBackward);
  ValueId O1 = B.forward();
  ValueId Penalty = B.grad({O1}, /*Retain=*/true, /*Create=*/true);
  ValueId O2 = B.forward();
  B.backward({B.combine({O1, O2, Penalty})});
  EXPECT_TRUE(B.run().Hazards.empty());
}

TEST(HazardAnalysisOncePerBackward, BackwardOfAnotherObjectDoesNotRearm) {
  GraphBuilder B(OncePerBackward);
  ObjectId E = B.G.addObject({"E", true, true});
  ValueId O1 = B.forward();
  B.backward({B.forward(true, E)});
  ValueId O2 = B.forward();
  B.backward({O1, O2});
  EXPECT_TRUE(B.run().Hazards.empty());
}

TEST(HazardAnalysisOncePerBackward, BackwardOfUnknownHistoryRearms) {
  GraphBuilder B(OncePerBackward);
  ValueId O1 = B.forward();
  B.backward({B.G.unknownValue()}, /*Retain=*/true);
  B.forward();
  B.backward({O1});
  EXPECT_EQ(B.run().Hazards.size(), 1u);
}

TEST(HazardAnalysisOncePerBackward, ABackwardInALoopRearmsItsNextIteration) {
  // The loop's second iteration forwards after its first one's backward and
  // broadcasts over O1's graph.
  GraphBuilder B(OncePerBackward);
  ValueId O1 = B.forward();
  B.beginLoop();
  ValueId O2 = B.forward();
  B.backward({O2}, /*Retain=*/true);
  B.endLoop();
  B.backward({O1});
  EXPECT_EQ(B.run().Hazards.size(), 1u);
}

TEST(HazardAnalysisOncePerBackward, ForwardsInALoopBeforeOneBackwardAreOk) {
  // A recurrent cell per step, one backward after the loop: the second
  // iteration's forward finds the first one's graph live but does not
  // broadcast; the first broadcasts with nothing of the loop live yet.
  GraphBuilder B(OncePerBackward);
  ValueId Loss = B.detached();
  B.beginLoop();
  ValueId Step = B.forward();
  B.G.append(B.Block, Event::derive(Loss, {Step}, /*Strong=*/false));
  B.endLoop();
  B.backward({Loss});
  EXPECT_TRUE(B.run().Hazards.empty());
}

TEST(HazardAnalysisOncePerBackward, ALoopAfterABackwardOverARetainedGraph) {
  // The loop's first forward follows a backward that retained O1's graph.
  GraphBuilder B(OncePerBackward);
  ValueId O1 = B.forward();
  B.backward({O1}, /*Retain=*/true);
  ValueId Loss = B.detached();
  B.beginLoop();
  ValueId Step = B.forward();
  B.G.append(B.Block, Event::derive(Loss, {Step}, /*Strong=*/false));
  B.endLoop();
  B.backward({B.combine({O1, Loss})});
  AnalysisResult R = B.run();
  ASSERT_EQ(R.Hazards.size(), 1u);
  EXPECT_EQ(B.G.forwardOf(R.Hazards[0].Saver).Site, 0u);
}

TEST(EventGraph, WithoutReadsOfAValueKeepsOnlyItsStores) {
  // An output escapes into a pool that an opaque call's result reads back:
  // without that read, the backward no longer traverses the first graph.
  GraphBuilder B;
  ValueId Pool = B.G.addValue();
  ValueId O1 = B.forward();
  B.G.append(B.Block, Event::derive(Pool, {O1}, /*Strong=*/false));
  ValueId O2 = B.forward();
  B.backward({B.combine({Pool, O2})});
  EXPECT_EQ(B.run().Hazards.size(), 1u);
  EventGraph Without = B.G.withoutReadsOf(Pool);
  EXPECT_TRUE(analyzeHazards(Without).Hazards.empty());
  EXPECT_EQ(Without.numOrigins(), B.G.numOrigins());
  EXPECT_EQ(Without.blocks()[B.Block].Events[1].Sources.size(), 1u);
}

TEST(HazardAnalysis, SecondForwardUnderNoGradStillClobbers) {
  GraphBuilder B;
  ValueId O1 = B.forward();
  B.forward(/*Grad=*/false);
  B.backward({O1});
  EXPECT_EQ(B.run().Hazards.size(), 1u);
}

TEST(HazardAnalysis, AForwardInsideNoSyncLeavesTheNextOneWithoutBroadcast) {
  // with model.no_sync(): out1 = model(a); out2 = model(b)
  // (out1 + out2).backward(): the second forward does not broadcast.
  GraphBuilder B;
  ValueId A = B.G.addValue();
  Event First = Event::forward(B.NextSite++, B.D, true, A, {});
  First.NoSync = true;
  B.G.append(B.Block, First);
  ValueId C = B.G.addValue();
  Event Second = Event::forward(B.NextSite++, B.D, true, C, {});
  Second.NoSync = true;
  B.G.append(B.Block, Second);
  B.backward({B.combine({A, C})});
  EXPECT_TRUE(B.run().Hazards.empty());
  // Out of no_sync the next forward broadcasts again.
  GraphBuilder After;
  ValueId X = After.G.addValue();
  Event InNoSync = Event::forward(After.NextSite++, After.D, true, X, {});
  InNoSync.NoSync = true;
  After.G.append(After.Block, InNoSync);
  ValueId Y = After.forward();
  ValueId Z = After.forward();
  After.backward({After.combine({X, Y, Z})});
  AnalysisResult R = After.run();
  ASSERT_EQ(R.Hazards.size(), 2u);
  EXPECT_EQ(After.G.eventOf(R.Hazards[0].Writer).Site, 2u);
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
  EXPECT_EQ(R.Hazards[0].Saver, R.Hazards[0].Writer);
}

TEST(HazardAnalysis, LoopWithBackwardEachIterationIsOk) {
  GraphBuilder B;
  B.beginLoop();
  B.backward({B.forward()});
  B.endLoop();
  EXPECT_TRUE(B.run().Hazards.empty());
}

// Retained graphs (docs/ground-truth.md, test/lit/checks/ddp-multiple-forward-before-backward/retained-graphs.cpp).
TEST(HazardAnalysis, RetainedGraphFailsAtTheLaterBackwardThroughIt) {
  for (bool ViaGrad : {false, true}) {
    GraphBuilder B;
    ValueId O1 = B.forward();
    if (ViaGrad)
      B.grad({O1}, /*Retain=*/true, /*Create=*/false);
    else
      B.backward({O1}, /*Retain=*/true);
    B.forward();
    B.backward({O1});
    AnalysisResult R = B.run();
    ASSERT_EQ(R.Hazards.size(), 1u) << ViaGrad;
    EXPECT_EQ(B.G.forwardOf(R.Hazards[0].Writer).Site, 2u);
    EXPECT_EQ(R.Hazards[0].Backward, 3u);
  }
}

TEST(HazardAnalysis, BackwardWithoutRetainGraphEndsTheHazard) {
  for (bool ViaGrad : {false, true}) {
    GraphBuilder B;
    ValueId O1 = B.forward();
    if (ViaGrad)
      B.grad({O1}, /*Retain=*/false, /*Create=*/false);
    else
      B.backward({O1});
    B.forward();
    // Autograd refuses this backward for another reason: the graph is freed.
    B.backward({O1});
    EXPECT_TRUE(B.run().Hazards.empty()) << ViaGrad;
  }
}

TEST(HazardAnalysis, GradientsWithoutCreateGraphHaveNoHistory) {
  GraphBuilder B;
  ValueId O1 = B.forward();
  ValueId Grads = B.grad({O1}, /*Retain=*/true, /*Create=*/false);
  ValueId O2 = B.forward();
  B.backward({B.combine({O2, Grads})});
  EXPECT_TRUE(B.run().Hazards.empty());
}

TEST(HazardAnalysis, CreateGraphGradientsTraverseTheFirstGraph) {
  // The penalty's backward alone, and with the loss; with retain_graph
  // false too, since the gradients' graph saved the same buffers.
  for (bool Retain : {true, false})
    for (bool WithLoss : {false, true}) {
      GraphBuilder B;
      ValueId O1 = B.forward();
      ValueId Grads = B.grad({O1}, Retain, /*Create=*/true);
      B.forward();
      B.backward({WithLoss ? B.combine({O1, Grads}) : B.combine({Grads})});
      AnalysisResult R = B.run();
      ASSERT_EQ(R.Hazards.size(), 1u) << Retain << WithLoss;
      EXPECT_EQ(B.G.forwardOf(R.Hazards[0].Saver).Site, 0u);
      EXPECT_EQ(B.G.forwardOf(R.Hazards[0].Writer).Site, 2u);
    }
}

TEST(HazardAnalysis, CreateGraphWithoutSecondForwardIsOk) {
  GraphBuilder B;
  ValueId O1 = B.forward();
  ValueId Grads = B.grad({O1}, /*Retain=*/true, /*Create=*/true);
  B.backward({B.combine({O1, Grads})});
  EXPECT_TRUE(B.run().Hazards.empty());
}

TEST(HazardAnalysis, GradientsAreReplacedEachIteration) {
  // A penalty per iteration, backpropagated in its iteration: ok. Summed
  // over the iterations and backpropagated after the loop: an error.
  for (bool Accumulate : {false, true}) {
    GraphBuilder B;
    ValueId Penalty = B.G.addValue();
    B.beginLoop();
    ValueId Grads = B.grad({B.forward()}, /*Retain=*/true, /*Create=*/true);
    if (Accumulate)
      B.G.append(B.Block, Event::derive(Penalty, {Grads}, /*Strong=*/false));
    else
      B.backward({Grads});
    B.endLoop();
    if (Accumulate)
      B.backward({Penalty});
    AnalysisResult R = B.run();
    if (!Accumulate) {
      EXPECT_TRUE(R.Hazards.empty());
      continue;
    }
    // The iterations share one origin, so the next iteration's grad is
    // listed too; the penalty's backward must be.
    ASSERT_EQ(R.Clobbers.size(), 1u);
    EXPECT_TRUE(llvm::any_of(R.Hazards, [](const Hazard &H) {
      return H.Backward == 2u;
    }));
  }
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

// Big functions: verdicts only (the benchmark in bench/checker measures the
// time). Each shape is checked through the compact results (clobbers and the
// first backward of each pair) and, where small enough, the full listing.

/// N if/else statements in a row; the then-branch forwards on D or E in
/// turn, the else-branch does a tensor op; both add to one loss, and one
/// backward at the end traverses everything.
struct Branches {
  EventGraph G;
  std::vector<OriginId> Forwards;
  std::vector<ObjectId> ObjectOf;
  SiteId Backward = 0;

  Branches(unsigned N, bool BackwardInBranch = false) {
    ObjectId D = G.addObject({"D", true, true}), E = G.addObject({"E", true, true});
    unsigned Current = G.addBlock();
    G.setEntry(Current);
    OriginId Param;
    ValueId X = G.addInputValue(Param), Loss = G.addValue();
    SiteId Site = 0;
    for (unsigned I = 0; I < N; ++I) {
      unsigned Then = G.addBlock(), Else = G.addBlock(), Join = G.addBlock();
      G.addEdge(Current, Then);
      G.addEdge(Current, Else);
      G.addEdge(Then, Join);
      G.addEdge(Else, Join);
      ValueId Out = G.addValue();
      G.append(Then, Event::forward(Site++, I % 2 ? E : D, true, Out, {X}));
      Forwards.push_back(G.blocks()[Then].Events.back().Origin);
      ObjectOf.push_back(I % 2 ? E : D);
      if (BackwardInBranch)
        G.append(Then, Event::backward(Site++, {Out}, false));
      else
        G.append(Then, Event::derive(Loss, {Loss, Out}, true));
      ValueId Op = G.addValue();
      G.append(Else, Event::derive(Op, {X}, true));
      G.append(Else, Event::derive(Loss, {Loss, Op}, true));
      Current = Join;
    }
    Backward = Site;
    G.append(Current, Event::backward(Site, {Loss}, false));
  }
};

TEST(HazardAnalysisScale, ManyBranchesEachClobbersTheEarlierForwardsOnItsObject) {
  for (unsigned N : {40u, 600u}) {
    Branches S(N);
    AnalysisOptions Options;
    Options.ListHazards = N <= 40;
    AnalysisResult R = analyzeHazards(S.G, Options);
    // Every forward but the first on each object is a second forward.
    ASSERT_EQ(R.Clobbers.size(), N - 2) << N;
    size_t Pairs = 0;
    for (const Clobber &C : R.Clobbers) {
      unsigned K = llvm::find(S.Forwards, C.Writer) - S.Forwards.begin();
      ASSERT_LT(K, N);
      ASSERT_GE(K, 2u);
      for (unsigned J = 0; J < N; ++J)
        EXPECT_EQ(C.Savers.test(S.Forwards[J]),
                  J < K && S.ObjectOf[J] == S.ObjectOf[K])
            << "second " << K << ", first " << J;
      Pairs += C.Savers.count();
      // The first forward on its object, through the one backward.
      EXPECT_EQ(R.firstBackward(S.Forwards[K % 2], C.Writer),
                std::optional<SiteId>(S.Backward));
    }
    EXPECT_EQ(Pairs, 2 * ((N / 2) * (N / 2 - 1) / 2));
    if (Options.ListHazards)
      EXPECT_EQ(R.Hazards.size(), Pairs);
  }
}

TEST(HazardAnalysisScale, ManyBranchesWithABackwardPerForwardAreOk) {
  Branches S(600, /*BackwardInBranch=*/true);
  AnalysisResult R = analyzeHazards(S.G);
  EXPECT_TRUE(R.Clobbers.empty());
  EXPECT_TRUE(R.Hazards.empty());
}

/// N nested loops; each level's body forwards on D and (Accumulate) adds
/// the output to one loss that the innermost body backwards, or (otherwise)
/// backwards its own output at once.
struct NestedLoops {
  EventGraph G;
  std::vector<OriginId> Forwards;
  SiteId Backward = 0;

  NestedLoops(unsigned N, bool Accumulate) {
    ObjectId D = G.addObject({"D", true, true});
    unsigned Entry = G.addBlock();
    G.setEntry(Entry);
    ValueId Loss = G.addValue();
    std::vector<unsigned> Heads;
    unsigned Previous = Entry;
    SiteId Site = 0;
    for (unsigned I = 0; I < N; ++I) {
      unsigned Head = G.addBlock(), Body = G.addBlock();
      G.addEdge(Previous, Head);
      G.addEdge(Head, Body);
      ValueId Out = G.addValue();
      G.append(Body, Event::forward(Site++, D, true, Out, {}));
      Forwards.push_back(G.blocks()[Body].Events.back().Origin);
      if (Accumulate)
        G.append(Body, Event::derive(Loss, {Out}, false));
      else
        G.append(Body, Event::backward(Site++, {Out}, false));
      Heads.push_back(Head);
      Previous = Body;
    }
    Backward = Site;
    if (Accumulate)
      G.append(Previous, Event::backward(Site++, {Loss}, false));
    // The innermost body loops back; each loop's exit ends the enclosing
    // body, which loops back to its own head.
    G.addEdge(Previous, Heads.back());
    for (unsigned I = N; I-- > 0;) {
      unsigned Exit = G.addBlock();
      G.addEdge(Heads[I], Exit);
      if (I > 0)
        G.addEdge(Exit, Heads[I - 1]);
    }
  }
};

TEST(HazardAnalysisScale, NestedLoopsAccumulatingOneLossAllClobber) {
  for (unsigned N : {12u, 150u}) {
    NestedLoops S(N, /*Accumulate=*/true);
    AnalysisOptions Options;
    Options.ListHazards = N <= 12;
    AnalysisResult R = analyzeHazards(S.G, Options);
    // Every forward, the outermost one included (the inner loops may run no
    // iteration), runs while the outermost forward's graph is live and
    // before the backward that traverses it.
    ASSERT_EQ(R.Clobbers.size(), N);
    for (const Clobber &C : R.Clobbers) {
      EXPECT_TRUE(C.Savers.test(S.Forwards[0]));
      EXPECT_EQ(R.firstBackward(S.Forwards[0], C.Writer),
                std::optional<SiteId>(S.Backward));
    }
    if (Options.ListHazards) {
      size_t Pairs = 0;
      for (const Clobber &C : R.Clobbers)
        Pairs += C.Savers.count();
      EXPECT_EQ(R.Hazards.size(), Pairs);
    }
  }
}

TEST(HazardAnalysisScale, NestedLoopsWithABackwardAfterEachForwardAreOk) {
  NestedLoops S(150, /*Accumulate=*/false);
  AnalysisResult R = analyzeHazards(S.G);
  EXPECT_TRUE(R.Clobbers.empty());
  EXPECT_TRUE(R.Hazards.empty());
}

TEST(HazardAnalysis, LoopBackwardOfTheOutputTwoIterationsBack) {
  // for (...) { acc.backward(); acc = prev; prev = D(x); }: the backward in
  // iteration k traverses the forward of iteration k-2, which the forward of
  // iteration k-1 clobbered. Only a state of an early iteration (acc not yet
  // holding a forward's output) shows the forward still live before itself.
  GraphBuilder B;
  ValueId Acc = B.G.addValue(), Prev = B.G.addValue();
  B.beginLoop();
  B.backward({Acc});
  B.G.append(B.Block, Event::derive(Acc, {Prev}, /*Strong=*/true));
  ValueId Out = B.forward();
  B.G.append(B.Block, Event::derive(Prev, {Out}, /*Strong=*/true));
  B.endLoop();
  AnalysisResult R = B.run();
  ASSERT_EQ(R.Hazards.size(), 1u);
  EXPECT_EQ(R.Hazards[0].Saver, R.Hazards[0].Writer);
  EXPECT_EQ(R.Hazards[0].Backward, 0u);
}

TEST(HazardAnalysis, CompactResultsAgreeWithTheListingOnRandomGraphs) {
  // The frontend asks for one saver's first backward per writer; tests and
  // debugging list every hazard. Both views must agree.
  unsigned WithHazards = 0;
  for (unsigned Seed = 0; Seed < 3000; ++Seed) {
    std::mt19937 Random(Seed);
    auto Pick = [&](unsigned N) { return unsigned(Random() % N); };
    EventGraph G;
    unsigned Objects = 1 + Pick(2);
    for (unsigned O = 0; O < Objects; ++O)
      G.addObject({"D", Pick(5) != 0, Pick(6) != 0, Pick(3) == 0});
    TensorSetId Parameters =
        G.addTensorSet({TensorSetInfo::Kind::Parameters, "parameters"});
    unsigned Blocks = 1 + Pick(7);
    for (unsigned I = 0; I < Blocks; ++I)
      G.addBlock();
    G.setEntry(0);
    for (unsigned I = 0; I < Blocks; ++I)
      for (unsigned E = Pick(3); E > 0; --E)
        G.addEdge(I, Pick(Blocks));
    std::vector<ValueId> Values{G.unknownValue()};
    if (Pick(2)) {
      OriginId Origin;
      Values.push_back(G.addInputValue(Origin));
    }
    for (unsigned I = 2 + Pick(4); I > 0; --I)
      Values.push_back(G.addValue());
    SiteId Site = 0;
    auto Some = [&] {
      llvm::SmallVector<ValueId, 4> S;
      for (unsigned K = Pick(3); K > 0; --K)
        S.push_back(Values[Pick(Values.size())]);
      return S;
    };
    auto Target = [&] { return Values[1 + Pick(Values.size() - 1)]; };
    for (unsigned I = 0; I < Blocks; ++I)
      for (unsigned E = Pick(5); E > 0; --E)
        switch (Pick(5)) {
        case 0: {
          Event Forward = Event::forward(Site++, Pick(Objects), Pick(4) != 0,
                                         Target(), Some());
          if (Pick(2))
            Forward.Saves.push_back({Parameters, Some()});
          G.append(I, std::move(Forward));
          break;
        }
        case 4:
          G.append(I, Event::write(Site++, WriteKind::Step, {Parameters}));
          break;
        case 1:
          G.append(I, Event::derive(Target(), Some(), Pick(2)));
          break;
        case 2:
          G.append(I, Event::backward(Site++, {Values[Pick(Values.size())]},
                                      Pick(4) == 0));
          break;
        case 3:
          G.append(I, Event::grad(Site++, {Values[Pick(Values.size())]},
                                  Pick(4) == 0, Pick(3) == 0, Target()));
          break;
        }
    AnalysisResult R = analyzeHazards(G);
    std::set<std::tuple<OriginId, OriginId, SiteId>> Listed, Compact;
    for (const Hazard &H : R.Hazards)
      Listed.insert({H.Writer, H.Saver, H.Backward});
    for (const Clobber &C : R.Clobbers)
      for (unsigned First : C.Savers) {
        std::vector<SiteId> All = R.backwardsThrough(First, C.Writer);
        ASSERT_FALSE(All.empty()) << "seed " << Seed;
        EXPECT_EQ(R.firstBackward(First, C.Writer),
                  std::optional<SiteId>(All.front()))
            << "seed " << Seed;
        for (SiteId B : All)
          Compact.insert({C.Writer, First, B});
      }
    EXPECT_EQ(Listed, Compact) << "seed " << Seed;
    WithHazards += !Listed.empty();
  }
  EXPECT_GT(WithHazards, 50u);
}

// Writes other than a DDP broadcast (docs/design.md, "The write event"):
// an optimizer step on the parameters a forward saved.
class WriteGraph {
public:
  WriteGraph() {
    Block = G.addBlock();
    G.setEntry(Block);
  }
  /// A plain module (no broadcast) and the set of its parameters.
  std::pair<ObjectId, TensorSetId> module(const char *Name) {
    ObjectInfo Info;
    Info.Name = Name;
    Info.BroadcastsBuffers = false;
    Info.HasBuffers = false;
    return {G.addObject(Info),
            G.addTensorSet({TensorSetInfo::Kind::Parameters, Name})};
  }
  /// A forward that saves Saved if one of IfRequiresGrad may require grad
  /// (always if the list is empty).
  ValueId forward(ObjectId On, TensorSetId Saved,
                  std::initializer_list<ValueId> Inputs,
                  std::initializer_list<ValueId> IfRequiresGrad,
                  bool Grad = true) {
    ValueId Out = G.addValue();
    Event E = Event::forward(NextSite++, On, Grad, Out, Inputs);
    E.Saves.push_back({Saved, IfRequiresGrad});
    G.append(Block, std::move(E));
    return Out;
  }
  void step(TensorSetId Set) {
    G.append(Block, Event::write(NextSite++, WriteKind::Step, {Set}));
  }
  void backward(ValueId Root, bool Retain = false) {
    G.append(Block, Event::backward(NextSite++, {Root}, Retain));
  }
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
  SiteId siteOf(OriginId O) const { return G.eventOf(O).Site; }

  EventGraph G;
  unsigned Block;
  unsigned LoopHead = 0;
  SiteId NextSite = 0;
};

TEST(WriteEvent, DiscriminatorStepBetweenItsBackwardAndTheGeneratorsFails) {
  // fake = G(z); out = D(fake); lossD.backward(retain); optD.step();
  // lossG (through out).backward(): D saved its weights, the step wrote them.
  WriteGraph W;
  auto [Gen, GenParams] = W.module("G");
  auto [Disc, DiscParams] = W.module("D");
  ValueId Z = W.G.addValue();
  ValueId Fake = W.forward(Gen, GenParams, {Z}, {Z}); // site 0
  ValueId Out = W.forward(Disc, DiscParams, {Fake}, {Fake}); // site 1
  W.backward(Out, /*Retain=*/true); // site 2
  W.step(DiscParams); // site 3
  W.backward(Out); // site 4
  AnalysisResult R = analyzeHazards(W.G);
  ASSERT_EQ(R.Hazards.size(), 1u);
  EXPECT_EQ(W.siteOf(R.Hazards[0].Saver), 1u);
  EXPECT_TRUE(W.G.isWriteOrigin(R.Hazards[0].Writer));
  EXPECT_EQ(W.siteOf(R.Hazards[0].Writer), 3u);
  EXPECT_EQ(R.Hazards[0].Backward, 4u);
}

TEST(WriteEvent, StepAfterTheLastBackwardIsOk) {
  WriteGraph W;
  auto [Disc, DiscParams] = W.module("D");
  ValueId X = W.G.unknownValue();
  ValueId Out = W.forward(Disc, DiscParams, {X}, {});
  W.backward(Out, /*Retain=*/true);
  W.backward(Out);
  W.step(DiscParams);
  EXPECT_TRUE(analyzeHazards(W.G).Hazards.empty());
}

TEST(WriteEvent, ASetTheForwardDidNotSaveIsOk) {
  // The generator's step does not touch what D saved.
  WriteGraph W;
  auto [Gen, GenParams] = W.module("G");
  auto [Disc, DiscParams] = W.module("D");
  ValueId Out = W.forward(Disc, DiscParams, {W.G.unknownValue()}, {});
  W.backward(Out, /*Retain=*/true);
  W.step(GenParams);
  W.backward(Out);
  EXPECT_TRUE(analyzeHazards(W.G).Hazards.empty());
  (void)Gen;
}

TEST(WriteEvent, ASaveConditionalOnAnInputWithoutHistoryIsNotMade) {
  // A single Linear on data saves the input, not its weight: the step after
  // the forward does not clobber it.
  WriteGraph W;
  auto [Disc, DiscParams] = W.module("D");
  ValueId Data = W.G.addValue();
  ValueId Out = W.forward(Disc, DiscParams, {Data}, {Data});
  W.step(DiscParams);
  W.backward(Out);
  EXPECT_TRUE(analyzeHazards(W.G).Hazards.empty());
}

TEST(WriteEvent, TheConditionReadsTheInputBeforeTheOutputReplacesIt) {
  // x = D(x) with x of unknown history: the input may require grad.
  WriteGraph W;
  auto [Disc, DiscParams] = W.module("D");
  ValueId X = W.G.addValue();
  W.G.append(W.Block, Event::derive(X, {W.G.unknownValue()}, true));
  Event E = Event::forward(W.NextSite++, Disc, true, X, {X});
  E.Saves.push_back({DiscParams, {X}});
  W.G.append(W.Block, std::move(E));
  W.step(DiscParams);
  W.backward(X);
  EXPECT_EQ(analyzeHazards(W.G).Hazards.size(), 1u);
}

TEST(WriteEvent, NoGradForwardSavesNothing) {
  WriteGraph W;
  auto [Disc, DiscParams] = W.module("D");
  ValueId Out = W.forward(Disc, DiscParams, {W.G.unknownValue()}, {},
                          /*Grad=*/false);
  W.step(DiscParams);
  W.backward(Out);
  EXPECT_TRUE(analyzeHazards(W.G).Hazards.empty());
}

TEST(WriteEvent, StepInALoopOverOneRetainedGraphFailsOnTheSecondIteration) {
  // out = D(x); for (...) { out.backward(retain); opt.step(); }
  WriteGraph W;
  auto [Disc, DiscParams] = W.module("D");
  ValueId Out = W.forward(Disc, DiscParams, {W.G.unknownValue()}, {});
  W.beginLoop();
  W.backward(Out, /*Retain=*/true);
  W.step(DiscParams);
  W.endLoop();
  AnalysisResult R = analyzeHazards(W.G);
  ASSERT_EQ(R.Hazards.size(), 1u);
  EXPECT_EQ(R.Hazards[0].Backward, 1u);
  EXPECT_EQ(W.siteOf(R.Hazards[0].Writer), 2u);
}

TEST(WriteEvent, ForwardBackwardStepPerIterationIsOk) {
  WriteGraph W;
  auto [Disc, DiscParams] = W.module("D");
  W.beginLoop();
  ValueId Out = W.forward(Disc, DiscParams, {W.G.unknownValue()}, {});
  W.backward(Out);
  W.step(DiscParams);
  W.endLoop();
  EXPECT_TRUE(analyzeHazards(W.G).Hazards.empty());
}

TEST(WriteEvent, ABroadcastIsAWriteOfTheObjectsBuffers) {
  // The DDP rule is the instance where the forward itself writes.
  EventGraph G;
  ObjectId D = G.addObject({"D", true, true});
  EXPECT_EQ(G.tensorSet(G.object(D).Buffers).SetKind,
            TensorSetInfo::Kind::Buffers);
  unsigned B = G.addBlock();
  G.setEntry(B);
  ValueId A = G.addValue(), C = G.addValue();
  G.append(B, Event::forward(0, D, true, A, {}));
  // A step of the buffers, as a write, clobbers the first forward too.
  G.append(B, Event::write(1, WriteKind::InPlace, {G.object(D).Buffers}));
  G.append(B, Event::forward(2, D, true, C, {}));
  G.append(B, Event::backward(3, {A}, false));
  AnalysisResult R = analyzeHazards(G);
  ASSERT_EQ(R.Clobbers.size(), 2u);
  EXPECT_TRUE(G.isWriteOrigin(R.Clobbers[0].Writer));
  EXPECT_TRUE(G.isForwardOrigin(R.Clobbers[1].Writer));
}

TEST(WriteEvent, ASilentWriteClobbersAsALoudOneAndIsMarked) {
  // A fused step (silent) and a plain one on the same saved parameters:
  // both clobber the forward, and only the fused one's clobber is silent,
  // so neither hides the other.
  EventGraph G;
  ObjectId D = G.addObject({"D", false, false});
  TensorSetId Parameters =
      G.addTensorSet({TensorSetInfo::Kind::Parameters, "D's parameters"});
  unsigned B = G.addBlock();
  G.setEntry(B);
  ValueId Out = G.addValue();
  Event Forward = Event::forward(0, D, true, Out, {});
  Forward.Saves.push_back(Save{Parameters, {}});
  G.append(B, std::move(Forward));
  G.append(B, Event::write(1, WriteKind::Step, {Parameters}, {},
                           /*Silent=*/true));
  G.append(B, Event::write(2, WriteKind::Step, {Parameters}));
  G.append(B, Event::backward(3, {Out}, false));
  AnalysisResult R = analyzeHazards(G);
  ASSERT_EQ(R.Clobbers.size(), 2u);
  EXPECT_EQ(G.eventOf(R.Clobbers[0].Writer).Site, 1u);
  EXPECT_TRUE(R.Clobbers[0].Silent);
  EXPECT_FALSE(R.Clobbers[1].Silent);
  for (const Clobber &C : R.Clobbers)
    EXPECT_EQ(R.firstBackward(*C.Savers.begin(), C.Writer), SiteId(3));
}

TEST(WriteEvent, AStepOverAForwardSavedUnderHooksIsSilentForItAlone) {
  // Two forwards of D save its parameters, the first under activation
  // checkpointing's hooks; a plain step before the backward through both:
  // its clobber splits in two, silent for the checkpointed forward and loud
  // for the other.
  EventGraph G;
  ObjectId D = G.addObject({"D", false, false});
  TensorSetId Parameters =
      G.addTensorSet({TensorSetInfo::Kind::Parameters, "D's parameters"});
  unsigned B = G.addBlock();
  G.setEntry(B);
  ValueId Checkpointed = G.addValue(), Plain = G.addValue();
  Event First = Event::forward(0, D, true, Checkpointed, {});
  First.Saves.push_back(Save{Parameters, {}});
  First.SavesUnderHooks = true;
  G.append(B, std::move(First));
  Event Second = Event::forward(1, D, true, Plain, {});
  Second.Saves.push_back(Save{Parameters, {}});
  G.append(B, std::move(Second));
  OriginId FirstOrigin = G.blocks()[B].Events[0].Origin;
  OriginId SecondOrigin = G.blocks()[B].Events[1].Origin;
  G.append(B, Event::write(2, WriteKind::Step, {Parameters}));
  G.append(B, Event::backward(3, {Checkpointed, Plain}, false));
  AnalysisResult R = analyzeHazards(G);
  ASSERT_EQ(R.Clobbers.size(), 2u);
  EXPECT_EQ(R.Clobbers[0].Writer, R.Clobbers[1].Writer);
  EXPECT_TRUE(R.Clobbers[0].Silent);
  EXPECT_TRUE(R.Clobbers[0].Savers.test(FirstOrigin));
  EXPECT_FALSE(R.Clobbers[0].Savers.test(SecondOrigin));
  EXPECT_FALSE(R.Clobbers[1].Silent);
  EXPECT_TRUE(R.Clobbers[1].Savers.test(SecondOrigin));
  EXPECT_FALSE(R.Clobbers[1].Savers.test(FirstOrigin));
}

/// In-place writes on values: an op saves its output's or an operand's
/// storage, and a write goes through the storage a value points to.
struct ValueGraph : WriteGraph {
  TensorSetId storage() {
    return G.addTensorSet({TensorSetInfo::Kind::Tensors, "t"});
  }
  /// Out = op(Inputs), saving its output's storage (sigmoid) when
  /// SavesOutput, else the storage of Saved (a multiplication's operand).
  ValueId op(llvm::ArrayRef<ValueId> Inputs, bool SavesOutput,
             std::optional<ValueId> Saved = std::nullopt) {
    ValueId Out = G.addValue();
    Event E = Event::op(NextSite++, true, Out, Inputs, storage());
    Save S;
    S.StorageOf = SavesOutput ? Out : *Saved;
    E.Saves.push_back(S);
    G.append(Block, std::move(E));
    return Out;
  }
  /// Target = a handle copy or view of Source.
  void alias(ValueId Target, ValueId Source) {
    Event E = Event::derive(Target, {Source}, true);
    E.StorageOf = Source;
    G.append(Block, std::move(E));
  }
  /// Target = a new tensor computed from Sources (not an op that saves).
  void fresh(ValueId Target, llvm::ArrayRef<ValueId> Sources) {
    Event E = Event::derive(Target, Sources, true);
    E.NewStorage = storage();
    G.append(Block, std::move(E));
  }
  void writeThrough(ValueId V) {
    G.append(Block, Event::write(NextSite++, WriteKind::InPlace, {}, {V}));
  }
};

TEST(ValueWrite, InPlaceOpOnASigmoidsOutputFails) {
  // gate = sigmoid(x); gate.mul_(2); gate.backward()
  ValueGraph V;
  ValueId X = V.G.unknownValue();
  ValueId Gate = V.G.addValue();
  V.alias(Gate, V.op({X}, /*SavesOutput=*/true)); // site 0
  V.writeThrough(Gate);                           // site 1
  V.backward(Gate);                               // site 2
  AnalysisResult R = analyzeHazards(V.G);
  ASSERT_EQ(R.Hazards.size(), 1u);
  EXPECT_TRUE(V.G.isOpOrigin(R.Hazards[0].Saver));
  EXPECT_EQ(V.siteOf(R.Hazards[0].Writer), 1u);
  EXPECT_EQ(R.Hazards[0].Backward, 2u);
}

TEST(ValueWrite, AWriteThroughAViewReachesTheStorage) {
  ValueGraph V;
  ValueId Gate = V.G.addValue(), View = V.G.addValue();
  V.alias(Gate, V.op({V.G.unknownValue()}, true));
  V.alias(View, Gate);
  V.writeThrough(View);
  V.backward(Gate);
  EXPECT_EQ(analyzeHazards(V.G).Hazards.size(), 1u);
}

TEST(ValueWrite, ANewTensorInTheSameVariableIsOk) {
  // h = relu(x); h = h * 2 (a new tensor, saves nothing); h.add_(1)
  ValueGraph V;
  ValueId H = V.G.addValue();
  V.alias(H, V.op({V.G.unknownValue()}, true));
  V.fresh(H, {H});
  V.writeThrough(H);
  V.backward(H);
  EXPECT_TRUE(analyzeHazards(V.G).Hazards.empty());
}

TEST(ValueWrite, AnOpWithoutAnInputThatRequiresGradSavesNothing) {
  ValueGraph V;
  ValueId Data = V.G.addValue(), Probs = V.G.addValue();
  V.fresh(Data, {});
  V.alias(Probs, V.op({Data}, true));
  V.writeThrough(Probs);
  V.backward(V.G.unknownValue());
  EXPECT_TRUE(analyzeHazards(V.G).Hazards.empty());
}

TEST(ValueWrite, AnOperandSavedByAMultiplicationIsWrittenOnAnyPath) {
  // h = f(x); g = h * w; if (c) h += y; g.backward()
  ValueGraph V;
  ValueId H = V.G.addValue();
  V.fresh(H, {V.G.unknownValue()});
  ValueId G = V.op({H, V.G.unknownValue()}, false, H);
  unsigned Then = V.G.addBlock(), Join = V.G.addBlock();
  V.G.addEdge(V.Block, Then);
  V.G.addEdge(V.Block, Join);
  V.G.addEdge(Then, Join);
  V.Block = Then;
  V.writeThrough(H);
  V.Block = Join;
  V.backward(G);
  EXPECT_EQ(analyzeHazards(V.G).Hazards.size(), 1u);
}

TEST(ValueWrite, AnInputsStorageIsItsOwn) {
  // forward(x): y = x * w saves x; x.add_(1) fails a later backward.
  ValueGraph V;
  OriginId Origin;
  ValueId X = V.G.addInputValue(Origin);
  V.G.setInputStorage(X, V.storage());
  ValueId Y = V.op({X, V.G.unknownValue()}, false, X);
  V.writeThrough(X);
  V.backward(Y);
  EXPECT_EQ(analyzeHazards(V.G).Hazards.size(), 1u);
}

} // namespace
