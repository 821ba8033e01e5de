//===- HazardAnalysis.cpp -------------------------------------------------===//

#include "HazardAnalysis.h"
#include <algorithm>
#include <deque>
#include <tuple>

namespace ddpguard {
namespace model {
namespace {

/// Bit NumOrigins of a provenance set stands for "unknown history".
struct State {
  std::vector<llvm::SmallBitVector> Provenance;
  llvm::SmallBitVector Live;
  /// Clobbered[F1] = forwards that broadcast while F1's graph was live.
  std::vector<llvm::SmallBitVector> Clobbered;
  bool Reached = false;

  bool join(const State &Other) {
    if (!Other.Reached)
      return false;
    if (!Reached) {
      *this = Other;
      return true;
    }
    bool Changed = false;
    auto Merge = [&Changed](llvm::SmallBitVector &Into,
                            const llvm::SmallBitVector &From) {
      llvm::SmallBitVector Before = Into;
      Into |= From;
      Changed |= Before != Into;
    };
    for (size_t V = 0; V < Provenance.size(); ++V)
      Merge(Provenance[V], Other.Provenance[V]);
    Merge(Live, Other.Live);
    for (size_t O = 0; O < Clobbered.size(); ++O)
      Merge(Clobbered[O], Other.Clobbered[O]);
    return Changed;
  }
};

class Analyzer {
public:
  explicit Analyzer(const EventGraph &G)
      : G(G), NumOrigins(G.numOrigins()), Unknown(NumOrigins) {}

  AnalysisResult run();

private:
  State initialState() const;
  /// Applies block B's events to S; with Result set, records what they show.
  void transfer(unsigned B, State &S, AnalysisResult *Result) const;
  llvm::SmallBitVector provenanceOf(const State &S,
                                    llvm::ArrayRef<ValueId> Values) const;

  const EventGraph &G;
  unsigned NumOrigins;
  unsigned Unknown;
};

State Analyzer::initialState() const {
  State S;
  S.Reached = true;
  S.Provenance.assign(G.numValues(), llvm::SmallBitVector(NumOrigins + 1));
  S.Provenance[G.unknownValue()].set(Unknown);
  for (auto [Value, Origin] : G.inputs())
    S.Provenance[Value].set(Origin);
  S.Live.resize(NumOrigins);
  S.Clobbered.assign(NumOrigins, llvm::SmallBitVector(NumOrigins));
  return S;
}

llvm::SmallBitVector
Analyzer::provenanceOf(const State &S, llvm::ArrayRef<ValueId> Values) const {
  llvm::SmallBitVector P(NumOrigins + 1);
  for (ValueId V : Values)
    P |= S.Provenance[V];
  return P;
}

void Analyzer::transfer(unsigned B, State &S, AnalysisResult *Result) const {
  for (const Event &E : G.blocks()[B].Events) {
    switch (E.EventKind) {
    case Event::Kind::Derive: {
      llvm::SmallBitVector P = provenanceOf(S, E.Sources);
      if (E.Strong)
        S.Provenance[E.Target] = P;
      else
        S.Provenance[E.Target] |= P;
      break;
    }
    case Event::Kind::Forward: {
      const ObjectInfo &Object = G.object(E.Object);
      if (Object.BroadcastsBuffers && Object.HasBuffers)
        for (int O : S.Live.set_bits())
          if (G.forwardOf(O).Object == E.Object)
            S.Clobbered[O].set(E.Origin);
      // Under no_grad the output carries no history at all.
      llvm::SmallBitVector P(NumOrigins + 1);
      if (E.GradEnabled) {
        P = provenanceOf(S, E.Sources);
        P.set(E.Origin);
        S.Live.set(E.Origin);
      }
      S.Provenance[E.Target] = P;
      break;
    }
    case Event::Kind::Backward: {
      llvm::SmallBitVector P = provenanceOf(S, E.Sources);
      bool ThroughUnknown = P.test(Unknown);
      P.resize(NumOrigins);
      if (ThroughUnknown)
        P |= S.Live;
      if (Result) {
        for (int O : P.set_bits())
          if (S.Live.test(O))
            for (int Second : S.Clobbered[O].set_bits())
              Result->Hazards.push_back(
                  {static_cast<OriginId>(O), static_cast<OriginId>(Second),
                   E.Site});
        Result->Backwards.push_back({E.Site, P, E.RetainGraph, ThroughUnknown});
      }
      if (!E.RetainGraph)
        for (int O : P.set_bits()) {
          S.Live.reset(O);
          S.Clobbered[O].reset();
        }
      break;
    }
    case Event::Kind::Return:
      if (Result) {
        llvm::SmallBitVector P = provenanceOf(S, E.Sources);
        P.resize(NumOrigins);
        Result->ReturnedOrigins |= P;
      }
      break;
    }
  }
}

AnalysisResult Analyzer::run() {
  auto Blocks = G.blocks();
  std::vector<State> In(Blocks.size());
  if (!Blocks.empty())
    In[G.entry()] = initialState();

  std::deque<unsigned> Worklist;
  std::vector<bool> Queued(Blocks.size(), false);
  if (!Blocks.empty()) {
    Worklist.push_back(G.entry());
    Queued[G.entry()] = true;
  }
  while (!Worklist.empty()) {
    unsigned B = Worklist.front();
    Worklist.pop_front();
    Queued[B] = false;
    State Out = In[B];
    transfer(B, Out, nullptr);
    for (unsigned Succ : Blocks[B].Successors)
      if (In[Succ].join(Out) && !Queued[Succ]) {
        Queued[Succ] = true;
        Worklist.push_back(Succ);
      }
  }

  AnalysisResult Result;
  Result.ReturnedOrigins.resize(NumOrigins);
  State Exit;
  for (unsigned B = 0; B < Blocks.size(); ++B) {
    if (!In[B].Reached)
      continue;
    State Out = In[B];
    transfer(B, Out, &Result);
    if (Blocks[B].Successors.empty())
      Exit.join(Out);
  }
  if (Exit.Reached)
    for (auto &P : Exit.Provenance) {
      P.resize(NumOrigins);
      Result.ExitProvenance.push_back(P);
    }

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
