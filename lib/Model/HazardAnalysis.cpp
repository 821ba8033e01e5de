//===- HazardAnalysis.cpp -------------------------------------------------===//

#include "HazardAnalysis.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/SparseBitVector.h"
#include <algorithm>
#include <deque>
#include <tuple>

namespace ddpguard {
namespace model {
namespace {

using Origins = llvm::SparseBitVector<>;

/// Origin index NumOrigins in a provenance set stands for "unknown history".
struct State {
  /// Only live values with a non-empty history.
  llvm::DenseMap<ValueId, Origins> Provenance;
  Origins Live;
  /// Clobbered[F1] = forwards that broadcast while F1's graph was live.
  llvm::DenseMap<OriginId, Origins> Clobbered;
  bool Reached = false;

  bool join(const State &Other) {
    if (!Other.Reached)
      return false;
    if (!Reached) {
      *this = Other;
      return true;
    }
    bool Changed = Live |= Other.Live;
    for (const auto &[Value, From] : Other.Provenance)
      Changed |= Provenance[Value] |= From;
    for (const auto &[Origin, From] : Other.Clobbered)
      Changed |= Clobbered[Origin] |= From;
    return Changed;
  }
};

class Analyzer {
public:
  explicit Analyzer(const EventGraph &G)
      : G(G), NumOrigins(G.numOrigins()), Unknown(NumOrigins) {}

  AnalysisResult run();

private:
  void computeLiveness();
  State initialState() const;
  /// Drops dead values, and forwards no live value derives from.
  void prune(State &S, unsigned Block) const;
  /// Applies block B's events to S; with Result set, records what they show.
  void transfer(unsigned B, State &S, AnalysisResult *Result) const;
  Origins provenanceOf(const State &S, llvm::ArrayRef<ValueId> Values) const;
  static llvm::SmallBitVector dense(const Origins &O, unsigned Size);

  const EventGraph &G;
  unsigned NumOrigins;
  unsigned Unknown;
  std::vector<llvm::BitVector> LiveIn;
};

void Analyzer::computeLiveness() {
  auto Blocks = G.blocks();
  unsigned N = G.numValues();
  std::vector<std::vector<unsigned>> Predecessors(Blocks.size());
  for (unsigned B = 0; B < Blocks.size(); ++B)
    for (unsigned Succ : Blocks[B].Successors)
      Predecessors[Succ].push_back(B);
  llvm::BitVector ExitLive(N);
  for (auto [Value, Origin] : G.inputs())
    ExitLive.set(Value);
  for (ValueId V : G.escaping())
    ExitLive.set(V);
  ExitLive.set(G.unknownValue());

  LiveIn.assign(Blocks.size(), llvm::BitVector(N));
  std::deque<unsigned> Worklist;
  std::vector<bool> Queued(Blocks.size(), true);
  for (unsigned B = 0; B < Blocks.size(); ++B)
    Worklist.push_back(B);
  while (!Worklist.empty()) {
    unsigned B = Worklist.front();
    Worklist.pop_front();
    Queued[B] = false;
    llvm::BitVector Live =
        Blocks[B].Successors.empty() ? ExitLive : llvm::BitVector(N);
    for (unsigned Succ : Blocks[B].Successors)
      Live |= LiveIn[Succ];
    for (const Event &E : llvm::reverse(Blocks[B].Events)) {
      bool Kills = E.EventKind == Event::Kind::Forward ||
                   (E.EventKind == Event::Kind::Derive && E.Strong);
      if (Kills)
        Live.reset(E.Target);
      if (E.EventKind == Event::Kind::Derive && !E.Strong)
        Live.set(E.Target);
      for (ValueId V : E.Sources)
        Live.set(V);
    }
    if (Live != LiveIn[B]) {
      LiveIn[B] = std::move(Live);
      for (unsigned Pred : Predecessors[B])
        if (!Queued[Pred]) {
          Queued[Pred] = true;
          Worklist.push_back(Pred);
        }
    }
  }
}

State Analyzer::initialState() const {
  State S;
  S.Reached = true;
  S.Provenance[G.unknownValue()].set(Unknown);
  for (auto [Value, Origin] : G.inputs())
    S.Provenance[Value].set(Origin);
  return S;
}

void Analyzer::prune(State &S, unsigned Block) const {
  const llvm::BitVector &Live = LiveIn[Block];
  Origins Reachable;
  for (auto It = S.Provenance.begin(); It != S.Provenance.end();) {
    auto Current = It++;
    if (!Live.test(Current->first) || Current->second.empty())
      S.Provenance.erase(Current);
    else
      Reachable |= Current->second;
  }
  S.Live &= Reachable;
  for (auto It = S.Clobbered.begin(); It != S.Clobbered.end();) {
    auto Current = It++;
    if (!S.Live.test(Current->first))
      S.Clobbered.erase(Current);
  }
}

Origins Analyzer::provenanceOf(const State &S,
                               llvm::ArrayRef<ValueId> Values) const {
  Origins P;
  for (ValueId V : Values) {
    auto It = S.Provenance.find(V);
    if (It != S.Provenance.end())
      P |= It->second;
  }
  return P;
}

llvm::SmallBitVector Analyzer::dense(const Origins &O, unsigned Size) {
  llvm::SmallBitVector Result(Size);
  for (unsigned Bit : O)
    if (Bit < Size)
      Result.set(Bit);
  return Result;
}

void Analyzer::transfer(unsigned B, State &S, AnalysisResult *Result) const {
  for (const Event &E : G.blocks()[B].Events) {
    switch (E.EventKind) {
    case Event::Kind::Derive: {
      Origins P = provenanceOf(S, E.Sources);
      if (E.Strong)
        S.Provenance[E.Target] = std::move(P);
      else
        S.Provenance[E.Target] |= P;
      break;
    }
    case Event::Kind::Forward: {
      const ObjectInfo &Object = G.object(E.Object);
      if (Object.BroadcastsBuffers && Object.HasBuffers)
        for (unsigned O : S.Live)
          if (G.forwardOf(O).Object == E.Object)
            S.Clobbered[O].set(E.Origin);
      // Under no_grad the output carries no history at all.
      Origins P;
      if (E.GradEnabled) {
        P = provenanceOf(S, E.Sources);
        P.set(E.Origin);
        S.Live.set(E.Origin);
      }
      S.Provenance[E.Target] = std::move(P);
      break;
    }
    case Event::Kind::Backward: {
      Origins P = provenanceOf(S, E.Sources);
      bool ThroughUnknown = P.test(Unknown);
      P.reset(Unknown);
      if (ThroughUnknown)
        P |= S.Live;
      if (Result) {
        for (unsigned O : P) {
          auto Clobbers = S.Clobbered.find(O);
          if (S.Live.test(O) && Clobbers != S.Clobbered.end())
            for (unsigned Second : Clobbers->second)
              Result->Hazards.push_back({O, Second, E.Site});
        }
        Result->Backwards.push_back(
            {E.Site, dense(P, NumOrigins), E.RetainGraph, ThroughUnknown});
      }
      if (!E.RetainGraph)
        for (unsigned O : P) {
          S.Live.reset(O);
          S.Clobbered.erase(O);
        }
      break;
    }
    case Event::Kind::Return:
      if (Result)
        Result->ReturnedOrigins |= dense(provenanceOf(S, E.Sources), NumOrigins);
      break;
    }
  }
}

AnalysisResult Analyzer::run() {
  auto Blocks = G.blocks();
  AnalysisResult Result;
  Result.ReturnedOrigins.resize(NumOrigins);
  if (Blocks.empty())
    return Result;
  computeLiveness();

  std::vector<State> In(Blocks.size());
  In[G.entry()] = initialState();
  prune(In[G.entry()], G.entry());
  std::deque<unsigned> Worklist{G.entry()};
  std::vector<bool> Queued(Blocks.size(), false);
  Queued[G.entry()] = true;
  while (!Worklist.empty()) {
    unsigned B = Worklist.front();
    Worklist.pop_front();
    Queued[B] = false;
    State Out = In[B];
    transfer(B, Out, nullptr);
    for (unsigned Succ : Blocks[B].Successors) {
      // Pruning before the join keeps the join monotone.
      State Into = Out;
      prune(Into, Succ);
      if (In[Succ].join(Into) && !Queued[Succ]) {
        Queued[Succ] = true;
        Worklist.push_back(Succ);
      }
    }
  }

  State Exit;
  for (unsigned B = 0; B < Blocks.size(); ++B) {
    if (!In[B].Reached)
      continue;
    State Out = In[B];
    transfer(B, Out, &Result);
    if (Blocks[B].Successors.empty())
      Exit.join(Out);
  }
  for (const auto &[Value, P] : Exit.Provenance)
    Result.ExitProvenance[Value] = dense(P, NumOrigins);

  auto Key = [](const Hazard &H) {
    return std::make_tuple(H.SecondForward, H.FirstForward, H.Backward);
  };
  llvm::sort(Result.Hazards, [&](const Hazard &A, const Hazard &B) {
    return Key(A) < Key(B);
  });
  Result.Hazards.erase(std::unique(Result.Hazards.begin(), Result.Hazards.end(),
                                   [&](const Hazard &A, const Hazard &B) {
                                     return Key(A) == Key(B);
                                   }),
                       Result.Hazards.end());
  return Result;
}

} // namespace

AnalysisResult analyzeHazards(const EventGraph &Graph) {
  return Analyzer(Graph).run();
}

} // namespace model
} // namespace ddpguard
