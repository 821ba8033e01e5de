//===- HazardAnalysis.cpp -------------------------------------------------===//
//
// Pass 1 iterates to a fixed point over provenance and live forwards, with a
// worklist in first-in first-out order, joining every state that reaches a
// block into the block's entry state. A backward's traversed set grows as the
// states do, so the pairs (F1, F2) that a visit of a block sees (F1 live just
// before F2) are not all visible in the final states: a state from an early
// visit of a loop can still carry F1's graph where the final state says a
// backward killed it, and the rows of the visit live on in the block's entry
// state. The pairs are therefore recorded per visit, with the graphs each
// visit kills, and carried forward in time:
//
//   - the pairs a visit makes or carries flow, minus the graphs it kills,
//     into the entry state of each successor, where the successor's next
//     visit (or, after the last, its final state) picks them up;
//   - the final states are one more visit of every block, iterated to their
//     own fixed point (pass 2), and only there do backwards report hazards.
//
// Rather than carry the pairs (quadratic in number), both passes run
// backwards over sets of first forwards: "anticipated" at a point are the
// forwards whose graph a final-state backward traverses on some way on from
// that point before a kill. A pair (F1, F2) fails iff F1 is live before F2
// and anticipated after it, in some visit or in the final state.
//
//===----------------------------------------------------------------------===//

#include "HazardAnalysis.h"
#include "llvm/ADT/DenseSet.h"
#include <algorithm>
#include <deque>
#include <tuple>

namespace ddpguard {
namespace model {

using Origins = llvm::SparseBitVector<>;
using Values = llvm::SparseBitVector<>;
static constexpr unsigned None = ~0u;

/// What the queries about one result need: where the final states' backwards
/// are and where graphs die, per block and per pass-1 visit.
class BackwardIndex {
public:
  struct BackwardAt {
    unsigned Event;
    /// Index into AnalysisResult::Backwards.
    unsigned Use;
  };
  /// A backward in a pass-1 visit that kills the graphs of Dead.
  struct Kill {
    unsigned Event;
    Origins Dead;
  };
  /// A write (a Write event or a broadcasting forward) and the live
  /// forwards that saved what it writes, just before it.
  struct Generation {
    unsigned Event;
    OriginId Second;
    Origins Live;
  };
  struct Visit {
    unsigned Block;
    /// The live forwards in the block's entry state at the visit: an index
    /// into EntryLive (they only grow, so successive visits often share).
    unsigned Live;
    std::vector<Kill> Kills;
    std::vector<Generation> Generations;
    /// (successor index, graphs the edge drops).
    std::vector<std::pair<unsigned, Origins>> EdgeKills;
  };

  std::vector<llvm::SmallVector<unsigned, 2>> Successors;
  /// The final states: backwards per block in event order, graphs dropped
  /// per (block, successor index), and per write the live forwards that
  /// saved what it writes before it.
  std::vector<llvm::SmallVector<BackwardAt, 1>> BlockBackwards;
  llvm::DenseMap<std::pair<unsigned, unsigned>, Origins> EdgeKills;
  llvm::DenseMap<OriginId, Origins> FinalLiveBefore;
  /// The live forwards in each block's final entry state. A pair (F1, F2)
  /// exists only where F1 is live, which bounds every search below.
  std::vector<Origins> FinalLiveIn;
  std::vector<Origins> EntryLive;
  bool liveAt(unsigned Visit, OriginId First) const {
    return EntryLive[Visits[Visit].Live].test(First);
  }
  /// Pass 1's visits in time order, and per block the indices of its visits.
  std::vector<Visit> Visits;
  std::vector<std::vector<unsigned>> VisitsOf;
  /// Per origin: (block, event) of its forward or write, or ~0u for inputs.
  std::vector<std::pair<unsigned, unsigned>> ForwardPositions;

  /// Per first forward, memoised: the smallest final-state backward site
  /// reachable from a block's final entry, and from a visit's entry state.
  mutable llvm::DenseMap<OriginId, llvm::DenseMap<unsigned, unsigned>>
      EntryMinimum, AccumulatedMinimum;

  bool finalKilled(unsigned B, unsigned Succ, OriginId First) const {
    auto It = EdgeKills.find({B, Succ});
    return It != EdgeKills.end() && It->second.test(First);
  }
  static bool visitKilled(const Visit &V, unsigned Succ, OriginId First) {
    for (const auto &[Index, Dead] : V.EdgeKills)
      if (Index == Succ)
        return Dead.test(First);
    return false;
  }
  /// Whether a backward of the visit after event Start kills First's graph.
  static bool killedIn(const Visit &V, unsigned Start, OriginId First) {
    for (const Kill &K : V.Kills)
      if (K.Event >= Start && K.Dead.test(First))
        return true;
    return false;
  }
  /// The first visit of block B after visit V, or None for B's final state.
  unsigned nextVisit(unsigned B, unsigned V) const {
    const std::vector<unsigned> &Of = VisitsOf[B];
    auto It = std::upper_bound(Of.begin(), Of.end(), V);
    return It == Of.end() ? None : *It;
  }
  /// Visits the final-state backwards of block B from event Start on that
  /// traverse First, up to the first that does not retain its graph (which
  /// kills First's graph); returns whether one stopped it.
  template <typename Fn>
  bool scan(const std::vector<BackwardUse> &Uses, unsigned B, unsigned Start,
            OriginId First, Fn Visit) const {
    for (const BackwardAt &At : BlockBackwards[B]) {
      if (At.Event < Start)
        continue;
      const BackwardUse &Use = Uses[At.Use];
      if (First >= Use.Origins.size() || !Use.Origins.test(First))
        continue;
      Visit(Use.Site);
      if (!Use.RetainGraph)
        return true;
    }
    return false;
  }
  unsigned entryMinimum(const std::vector<BackwardUse> &Uses, OriginId First,
                        unsigned Start) const;
  unsigned accumulatedMinimum(const std::vector<BackwardUse> &Uses,
                              OriginId First, unsigned Visit) const;
  /// From the point after event Start of visit V (None: of the final state
  /// of block B).
  unsigned minimumFrom(const std::vector<BackwardUse> &Uses, OriginId First,
                       unsigned B, unsigned V, unsigned Start) const;
  /// The final-state blocks whose entry a pair made at (V, Start) reaches.
  void collectEntries(OriginId First, unsigned V, unsigned Start,
                      llvm::DenseSet<unsigned> &Seen,
                      llvm::DenseSet<unsigned> &Entries) const;
};

unsigned BackwardIndex::entryMinimum(const std::vector<BackwardUse> &Uses,
                                     OriginId First, unsigned Start) const {
  if (!FinalLiveIn[Start].test(First))
    return None;
  llvm::DenseMap<unsigned, unsigned> &Memo = EntryMinimum[First];
  if (auto It = Memo.find(Start); It != Memo.end())
    return It->second;
  // The blocks reachable from Start that no earlier query covered, with the
  // smallest site each can reach by itself or through a covered block.
  struct Node {
    unsigned Candidate = None;
  };
  llvm::DenseMap<unsigned, Node> Region;
  llvm::DenseMap<unsigned, llvm::SmallVector<unsigned, 2>> Predecessors;
  std::vector<unsigned> Work{Start};
  Region[Start];
  while (!Work.empty()) {
    unsigned B = Work.back();
    Work.pop_back();
    Node N;
    bool Stops = scan(Uses, B, 0, First, [&](SiteId Site) {
      N.Candidate = std::min(N.Candidate, Site);
    });
    if (!Stops)
      for (unsigned I = 0; I < Successors[B].size(); ++I) {
        unsigned Succ = Successors[B][I];
        if (finalKilled(B, I, First) || !FinalLiveIn[Succ].test(First))
          continue;
        if (auto Known = Memo.find(Succ); Known != Memo.end()) {
          N.Candidate = std::min(N.Candidate, Known->second);
          continue;
        }
        Predecessors[Succ].push_back(B);
        if (Region.try_emplace(Succ).second)
          Work.push_back(Succ);
      }
    Region[B] = N;
  }
  // A block reaches the smallest candidate of the blocks it reaches: hand
  // out candidates in ascending order, each to every block that reaches
  // its holder and holds nothing smaller yet.
  std::vector<std::pair<unsigned, unsigned>> Sources;
  for (const auto &[B, N] : Region)
    if (N.Candidate != None)
      Sources.push_back({N.Candidate, B});
  llvm::sort(Sources);
  for (auto [Value, Source] : Sources) {
    if (!Memo.try_emplace(Source, Value).second)
      continue;
    std::vector<unsigned> Reverse{Source};
    while (!Reverse.empty()) {
      unsigned B = Reverse.back();
      Reverse.pop_back();
      auto Preds = Predecessors.find(B);
      if (Preds == Predecessors.end())
        continue;
      for (unsigned Pred : Preds->second)
        if (Memo.try_emplace(Pred, Value).second)
          Reverse.push_back(Pred);
    }
  }
  for (const auto &[B, N] : Region)
    Memo.try_emplace(B, None);
  return Memo[Start];
}

unsigned
BackwardIndex::accumulatedMinimum(const std::vector<BackwardUse> &Uses,
                                  OriginId First, unsigned Start) const {
  // The pairs in a visit's entry state go through the visit and stay for
  // the block's next visit (or final state). Edges go forward in time, so
  // this is a depth-first search over a DAG.
  if (!liveAt(Start, First))
    return None;
  llvm::DenseMap<unsigned, unsigned> &Memo = AccumulatedMinimum[First];
  if (auto It = Memo.find(Start); It != Memo.end())
    return It->second;
  // A pair with First exists only in entry states where First is live:
  // other visits and final states are not even looked at.
  auto Dependencies = [&](unsigned V, auto Each) {
    const Visit &X = Visits[V];
    auto Live = [&](unsigned Next, unsigned Block) {
      if (Next == None ? FinalLiveIn[Block].test(First)
                       : liveAt(Next, First))
        Each(Next, Block);
    };
    Live(nextVisit(X.Block, V), X.Block);
    if (killedIn(X, 0, First))
      return;
    for (unsigned I = 0; I < Successors[X.Block].size(); ++I)
      if (!visitKilled(X, I, First))
        Live(nextVisit(Successors[X.Block][I], V), Successors[X.Block][I]);
  };
  std::vector<std::pair<unsigned, bool>> Stack{{Start, false}};
  while (!Stack.empty()) {
    auto [V, Expanded] = Stack.back();
    if (Memo.count(V)) {
      Stack.pop_back();
      continue;
    }
    if (!Expanded) {
      Stack.back().second = true;
      Dependencies(V, [&](unsigned Next, unsigned) {
        if (Next != None && !Memo.count(Next))
          Stack.push_back({Next, false});
      });
      continue;
    }
    Stack.pop_back();
    unsigned Minimum = None;
    Dependencies(V, [&](unsigned Next, unsigned Block) {
      Minimum = std::min(Minimum, Next == None
                                      ? entryMinimum(Uses, First, Block)
                                      : Memo.lookup(Next));
    });
    // entryMinimum may grow the outer map; look this one up again.
    AccumulatedMinimum[First][V] = Minimum;
  }
  return AccumulatedMinimum[First].lookup(Start);
}

unsigned BackwardIndex::minimumFrom(const std::vector<BackwardUse> &Uses,
                                    OriginId First, unsigned B, unsigned V,
                                    unsigned Start) const {
  unsigned Minimum = None;
  if (V == None) {
    if (scan(Uses, B, Start, First,
             [&](SiteId Site) { Minimum = std::min(Minimum, Site); }))
      return Minimum;
    for (unsigned I = 0; I < Successors[B].size(); ++I)
      if (!finalKilled(B, I, First))
        Minimum = std::min(Minimum,
                           entryMinimum(Uses, First, Successors[B][I]));
    return Minimum;
  }
  const Visit &X = Visits[V];
  if (killedIn(X, Start, First))
    return None;
  for (unsigned I = 0; I < Successors[B].size(); ++I) {
    if (visitKilled(X, I, First))
      continue;
    unsigned Succ = Successors[B][I];
    unsigned Next = nextVisit(Succ, V);
    Minimum = std::min(Minimum, Next == None
                                    ? entryMinimum(Uses, First, Succ)
                                    : accumulatedMinimum(Uses, First, Next));
  }
  return Minimum;
}

void BackwardIndex::collectEntries(OriginId First, unsigned V, unsigned Start,
                                   llvm::DenseSet<unsigned> &Seen,
                                   llvm::DenseSet<unsigned> &Entries) const {
  std::vector<unsigned> Work;
  auto Reach = [&](unsigned Next, unsigned Block) {
    if (Next == None) {
      if (FinalLiveIn[Block].test(First))
        Entries.insert(Block);
    } else if (liveAt(Next, First) && Seen.insert(Next).second) {
      Work.push_back(Next);
    }
  };
  auto Leave = [&](unsigned From, unsigned At) {
    const Visit &X = Visits[From];
    if (killedIn(X, At, First))
      return;
    for (unsigned I = 0; I < Successors[X.Block].size(); ++I)
      if (!visitKilled(X, I, First))
        Reach(nextVisit(Successors[X.Block][I], From),
              Successors[X.Block][I]);
  };
  Leave(V, Start);
  while (!Work.empty()) {
    unsigned W = Work.back();
    Work.pop_back();
    Reach(nextVisit(Visits[W].Block, W), Visits[W].Block);
    Leave(W, 0);
  }
}

AnalysisResult::AnalysisResult() = default;
AnalysisResult::AnalysisResult(AnalysisResult &&) = default;
AnalysisResult &AnalysisResult::operator=(AnalysisResult &&) = default;
AnalysisResult::~AnalysisResult() = default;

static const Clobber *findClobber(const std::vector<Clobber> &Clobbers,
                                  OriginId Second) {
  auto It = llvm::partition_point(
      Clobbers, [&](const Clobber &C) { return C.Writer < Second; });
  return It != Clobbers.end() && It->Writer == Second ? &*It : nullptr;
}

/// Calls Each(visit, event) for every point where Second made the pair
/// (First, Second): its pass-1 visits, then its final state (visit None).
template <typename Fn>
static void forEachMaking(const BackwardIndex &X, OriginId First,
                          OriginId Second, Fn Each) {
  auto [Block, Event] = X.ForwardPositions[Second];
  for (unsigned V : X.VisitsOf[Block])
    for (const BackwardIndex::Generation &Gen : X.Visits[V].Generations)
      if (Gen.Second == Second && Gen.Live.test(First))
        Each(V, Event);
  auto Final = X.FinalLiveBefore.find(Second);
  if (Final != X.FinalLiveBefore.end() && Final->second.test(First))
    Each(None, Event);
}

std::vector<SiteId> AnalysisResult::backwardsThrough(OriginId First,
                                                     OriginId Second) const {
  // First is the saver, Second the writer.
  std::vector<SiteId> Sites;
  const Clobber *C = findClobber(Clobbers, Second);
  if (!Index || !C || !C->Savers.test(First))
    return Sites;
  const BackwardIndex &X = *Index;
  auto Collect = [&](SiteId Site) { Sites.push_back(Site); };
  llvm::DenseSet<unsigned> SeenVisits, Entries;
  unsigned Block = X.ForwardPositions[Second].first;
  forEachMaking(X, First, Second, [&](unsigned V, unsigned Event) {
    if (V != None) {
      X.collectEntries(First, V, Event + 1, SeenVisits, Entries);
      return;
    }
    if (!X.scan(Backwards, Block, Event + 1, First, Collect))
      for (unsigned I = 0; I < X.Successors[Block].size(); ++I)
        if (!X.finalKilled(Block, I, First) &&
            X.FinalLiveIn[X.Successors[Block][I]].test(First))
          Entries.insert(X.Successors[Block][I]);
  });
  // Through the final states from every entry reached.
  llvm::DenseSet<unsigned> Seen(Entries.begin(), Entries.end());
  std::vector<unsigned> Work(Entries.begin(), Entries.end());
  while (!Work.empty()) {
    unsigned B = Work.back();
    Work.pop_back();
    if (X.scan(Backwards, B, 0, First, Collect))
      continue;
    for (unsigned I = 0; I < X.Successors[B].size(); ++I)
      if (!X.finalKilled(B, I, First) &&
          X.FinalLiveIn[X.Successors[B][I]].test(First) &&
          Seen.insert(X.Successors[B][I]).second)
        Work.push_back(X.Successors[B][I]);
  }
  llvm::sort(Sites);
  Sites.erase(std::unique(Sites.begin(), Sites.end()), Sites.end());
  return Sites;
}

std::optional<SiteId>
AnalysisResult::firstBackward(OriginId First, OriginId Second,
                              llvm::function_ref<bool(SiteId)> Skip) const {
  if (Skip) {
    for (SiteId Site : backwardsThrough(First, Second))
      if (!Skip(Site))
        return Site;
    return std::nullopt;
  }
  const Clobber *C = findClobber(Clobbers, Second);
  if (!Index || !C || !C->Savers.test(First))
    return std::nullopt;
  const BackwardIndex &X = *Index;
  unsigned Block = X.ForwardPositions[Second].first;
  unsigned Minimum = None;
  forEachMaking(X, First, Second, [&](unsigned V, unsigned Event) {
    Minimum = std::min(Minimum,
                       X.minimumFrom(Backwards, First, Block, V, Event + 1));
  });
  if (Minimum == None)
    return std::nullopt;
  return Minimum;
}

namespace {

/// Origin index NumOrigins in a provenance set stands for "unknown history".
struct State {
  /// Only live values with a non-empty history.
  llvm::DenseMap<ValueId, Origins> Provenance;
  /// Forwards whose graph is live.
  Origins Live;
  /// Per tensor set, the live forwards that saved it on some way here.
  llvm::DenseMap<TensorSetId, Origins> SavedBy;
  /// Only live values: the tensor sets their storage may be.
  llvm::DenseMap<ValueId, Origins> Storage;
  /// Objects whose next forward may broadcast: DDP's
  /// require_forward_param_sync, which the construction sets, a grad-mode
  /// forward sets and a forward with grad mode off clears (runtime's
  /// DDPCore::post_forward, PyTorch's _post_forward). Unknown at the
  /// function's entry, so set there.
  Origins MaySync;
  /// Objects broadcasting once per backward whose next forward may be the
  /// first grad-mode one since a backward reached their parameters (the
  /// runtime's grad_forward_since_backward_ unset). Set at the entry: the
  /// caller may have run a backward.
  Origins MayFollowBackward;
  /// Forwards that were live where a backward re-armed a once-per-backward
  /// broadcast, on some way here that has not run a grad-mode forward on
  /// their object since. Only these can be clobbered by that broadcast: on
  /// the other ways the forward does not broadcast (a loop whose iterations
  /// each run one forward before one backward after the loop).
  Origins LiveWhenArmed;
  bool Reached = false;

  bool join(const State &Other) {
    if (!Other.Reached)
      return false;
    if (!Reached) {
      *this = Other;
      return true;
    }
    bool Changed = Live |= Other.Live;
    Changed |= MaySync |= Other.MaySync;
    Changed |= MayFollowBackward |= Other.MayFollowBackward;
    Changed |= LiveWhenArmed |= Other.LiveWhenArmed;
    for (const auto &[Set, By] : Other.SavedBy)
      Changed |= SavedBy[Set] |= By;
    for (const auto &[Value, From] : Other.Provenance)
      Changed |= Provenance[Value] |= From;
    for (const auto &[Value, Sets] : Other.Storage)
      Changed |= Storage[Value] |= Sets;
    return Changed;
  }
};

} // namespace

class HazardAnalyzer {
public:
  HazardAnalyzer(const EventGraph &G, AnalysisOptions Options)
      : G(G), Options(Options), NumOrigins(G.numOrigins()),
        Unknown(NumOrigins) {}

  AnalysisResult run();

private:
  void computeLiveness();
  State initialState() const;
  /// Drops dead values, and forwards no live value derives from; returns
  /// the forwards dropped.
  Origins prune(State &S, unsigned Block) const;
  /// What prune(S, Block) would drop of the forwards, leaving S alone.
  Origins dropped(const State &S, unsigned Block) const;
  /// Applies block B's events to S. With Result set (the final states)
  /// records the backwards and what they show; otherwise records the
  /// visit's kills and pairs in Visit.
  void transfer(unsigned B, State &S, AnalysisResult *Result,
                BackwardIndex::Visit *Visit);
  Origins provenanceOf(const State &S, llvm::ArrayRef<ValueId> Values) const;
  /// The live forwards that saved Set.
  static Origins savers(const State &S, TensorSetId Set);
  /// Appends the sets E's saves take whose condition holds in S: those of
  /// its own output's storage (AfterStorage) or the others.
  void savedSets(const State &S, const Event &E, bool AfterStorage,
                 llvm::SmallVectorImpl<TensorSetId> &Out) const;
  /// Gives E's target the storage E says it has.
  static void setStorage(State &S, const Event &E);
  /// Records that Writer, event Event of the block, clobbers the savers in
  /// Clobbered: in the final state with Result, else in Visit.
  void recordWrite(unsigned Event, OriginId Writer, Origins Clobbered,
                   AnalysisResult *Result,
                   BackwardIndex::Visit *Visit);
  static llvm::SmallBitVector dense(const Origins &O, unsigned Size);
  /// Passes 2 and 3: anticipated forwards in the final states, then back
  /// through pass 1's visits; from them the clobbers.
  void anticipate(AnalysisResult &Result);

  const EventGraph &G;
  AnalysisOptions Options;
  unsigned NumOrigins;
  unsigned Unknown;
  /// Values some later event reads, at each block's entry.
  std::vector<Values> LiveIn;
  std::vector<Origins> ObjectForwards;
  Origins AllForwards;
  std::vector<bool> Reached;
  /// Per entry of AnalysisResult::Backwards: the origins it traverses.
  std::vector<Origins> Traversed;
  BackwardIndex *Index = nullptr;
};

void HazardAnalyzer::computeLiveness() {
  auto Blocks = G.blocks();
  std::vector<std::vector<unsigned>> Predecessors(Blocks.size());
  for (unsigned B = 0; B < Blocks.size(); ++B)
    for (unsigned Succ : Blocks[B].Successors)
      Predecessors[Succ].push_back(B);
  Values ExitLive;
  for (auto [Value, Origin] : G.inputs())
    ExitLive.set(Value);
  for (ValueId V : G.escaping())
    ExitLive.set(V);
  ExitLive.set(G.unknownValue());

  // Sparse: few values are live at once, however long the function.
  LiveIn.assign(Blocks.size(), Values());
  std::deque<unsigned> Worklist;
  std::vector<bool> Queued(Blocks.size(), true);
  for (unsigned B = 0; B < Blocks.size(); ++B)
    Worklist.push_back(B);
  while (!Worklist.empty()) {
    unsigned B = Worklist.front();
    Worklist.pop_front();
    Queued[B] = false;
    Values Live = Blocks[B].Successors.empty() ? ExitLive : Values();
    for (unsigned Succ : Blocks[B].Successors)
      Live |= LiveIn[Succ];
    for (const Event &E : llvm::reverse(Blocks[B].Events)) {
      bool Kills = E.EventKind == Event::Kind::Forward ||
                   E.EventKind == Event::Kind::Op ||
                   (E.EventKind == Event::Kind::Derive && E.Strong) ||
                   (E.EventKind == Event::Kind::Backward && E.ReturnsGradients);
      if (Kills)
        Live.reset(E.Target);
      if (E.EventKind == Event::Kind::Derive && !E.Strong)
        Live.set(E.Target);
      for (ValueId V : E.Sources)
        Live.set(V);
      if (E.StorageOf)
        Live.set(*E.StorageOf);
      for (const Save &Saved : E.Saves) {
        for (ValueId V : Saved.IfRequiresGrad)
          Live.set(V);
        if (Saved.StorageOf && *Saved.StorageOf != E.Target)
          Live.set(*Saved.StorageOf);
      }
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

State HazardAnalyzer::initialState() const {
  State S;
  S.Reached = true;
  S.Provenance[G.unknownValue()].set(Unknown);
  for (ObjectId O = 0; O < G.numObjects(); ++O) {
    S.MaySync.set(O);
    S.MayFollowBackward.set(O);
  }
  for (auto [Value, Origin] : G.inputs())
    S.Provenance[Value].set(Origin);
  for (auto [Value, Set] : G.inputStorage())
    S.Storage[Value].set(Set);
  return S;
}

Origins HazardAnalyzer::prune(State &S, unsigned Block) const {
  const Values &Live = LiveIn[Block];
  Origins Reachable;
  for (auto It = S.Provenance.begin(); It != S.Provenance.end();) {
    auto Current = It++;
    if (!Live.test(Current->first) || Current->second.empty())
      S.Provenance.erase(Current);
    else
      Reachable |= Current->second;
  }
  for (auto It = S.Storage.begin(); It != S.Storage.end();) {
    auto Current = It++;
    if (!Live.test(Current->first))
      S.Storage.erase(Current);
  }
  Origins Dropped = S.Live - Reachable;
  if (!Dropped.empty())
    S.Live.intersectWithComplement(Dropped);
  // Only live savers can be clobbered; the rest would only grow the state.
  for (auto It = S.SavedBy.begin(); It != S.SavedBy.end();) {
    auto Current = It++;
    Current->second &= S.Live;
    if (Current->second.empty())
      S.SavedBy.erase(Current);
  }
  return Dropped;
}

Origins HazardAnalyzer::dropped(const State &S, unsigned Block) const {
  const Values &Live = LiveIn[Block];
  Origins Reachable;
  for (const auto &[Value, From] : S.Provenance)
    if (Live.test(Value))
      Reachable |= From;
  return S.Live - Reachable;
}

Origins HazardAnalyzer::provenanceOf(const State &S,
                                     llvm::ArrayRef<ValueId> Values) const {
  Origins P;
  for (ValueId V : Values) {
    auto It = S.Provenance.find(V);
    if (It != S.Provenance.end())
      P |= It->second;
  }
  return P;
}

Origins HazardAnalyzer::savers(const State &S, TensorSetId Set) {
  auto It = S.SavedBy.find(Set);
  return It == S.SavedBy.end() ? Origins() : It->second & S.Live;
}

void HazardAnalyzer::savedSets(const State &S, const Event &E,
                               bool AfterStorage,
                               llvm::SmallVectorImpl<TensorSetId> &Out) const {
  for (const Save &Saved : E.Saves) {
    bool OfOutput = Saved.StorageOf && *Saved.StorageOf == E.Target;
    if (OfOutput != AfterStorage ||
        !(Saved.IfRequiresGrad.empty() ||
          !provenanceOf(S, Saved.IfRequiresGrad).empty()))
      continue;
    if (!Saved.StorageOf) {
      Out.push_back(Saved.Set);
      continue;
    }
    if (auto It = S.Storage.find(*Saved.StorageOf); It != S.Storage.end())
      for (unsigned Set : It->second)
        Out.push_back(Set);
  }
}

void HazardAnalyzer::setStorage(State &S, const Event &E) {
  if (E.NewStorage) {
    // The event makes its tensor again (a loop's next pass): what was saved
    // of the set before is an earlier tensor, and names are rebound to the
    // new one, so only saves from here on are the ones a write reaches
    // (the clean corpus: timm's dla.py, mmagic's augment.py).
    S.SavedBy.erase(*E.NewStorage);
    Origins Sets;
    Sets.set(*E.NewStorage);
    S.Storage[E.Target] = std::move(Sets);
  } else if (E.StorageOf && *E.StorageOf != E.Target) {
    auto It = S.Storage.find(*E.StorageOf);
    if (It == S.Storage.end()) {
      S.Storage.erase(E.Target);
      return;
    }
    Origins Sets = It->second; // Inserting below may move the entry.
    S.Storage[E.Target] = std::move(Sets);
  }
}

void HazardAnalyzer::recordWrite(unsigned Event, OriginId Writer,
                                 Origins Clobbered,
                                 AnalysisResult *Result,
                                 BackwardIndex::Visit *Visit) {
  if (Clobbered.empty())
    return;
  if (Result)
    Index->FinalLiveBefore[Writer] = std::move(Clobbered);
  else
    Visit->Generations.push_back({Event, Writer, std::move(Clobbered)});
}

llvm::SmallBitVector HazardAnalyzer::dense(const Origins &O, unsigned Size) {
  llvm::SmallBitVector Result(Size);
  for (unsigned Bit : O)
    if (Bit < Size)
      Result.set(Bit);
  return Result;
}

void HazardAnalyzer::transfer(unsigned B, State &S, AnalysisResult *Result,
                              BackwardIndex::Visit *Visit) {
  const auto &Events = G.blocks()[B].Events;
  for (unsigned I = 0; I < Events.size(); ++I) {
    const Event &E = Events[I];
    switch (E.EventKind) {
    case Event::Kind::Derive: {
      Origins P = provenanceOf(S, E.Sources);
      if (E.Strong)
        S.Provenance[E.Target] = std::move(P);
      else
        S.Provenance[E.Target] |= P;
      setStorage(S, E);
      break;
    }
    case Event::Kind::Op: {
      // No node without grad mode or an input that may require grad: no
      // history, nothing saved.
      Origins P = provenanceOf(S, E.Sources);
      bool MakesNode = E.GradEnabled && !P.empty();
      llvm::SmallVector<TensorSetId, 2> Saved;
      if (MakesNode)
        savedSets(S, E, /*AfterStorage=*/false, Saved);
      setStorage(S, E);
      if (MakesNode) {
        savedSets(S, E, /*AfterStorage=*/true, Saved);
        for (TensorSetId Set : Saved)
          S.SavedBy[Set].set(E.Origin);
        P.set(E.Origin);
        S.Live.set(E.Origin);
      }
      S.Provenance[E.Target] = std::move(P);
      break;
    }
    case Event::Kind::Forward: {
      const ObjectInfo &Object = G.object(E.Object);
      // It clobbers the live graphs of the earlier forwards on its object,
      // unless the previous forward on the object ran with grad mode off on
      // every way here: that one cleared require_forward_param_sync, so this
      // forward does not broadcast (it sets the flag again if it has grad).
      bool Syncs = S.MaySync.test(E.Object) && !E.Bypass;
      // Once per backward: only the first grad-mode forward after a
      // backward broadcasts (DDPCore::pre_forward), over what was live
      // when that backward re-armed it.
      if (Object.OncePerBackward && !S.MayFollowBackward.test(E.Object))
        Syncs = false;
      Origins Clobbered;
      if ((Result || Visit) && Syncs && Object.BroadcastsBuffers) {
        Clobbered = savers(S, Object.Buffers);
        if (Object.OncePerBackward)
          Clobbered &= S.LiveWhenArmed;
      }
      if (E.GradEnabled && !E.Bypass) {
        S.MayFollowBackward.reset(E.Object);
        S.LiveWhenArmed.intersectWithComplement(ObjectForwards[E.Object]);
      }
      // A bypass did not run the wrapper's forward: its flag stays.
      if (!E.Bypass) {
        if (E.GradEnabled && !E.NoSync)
          S.MaySync.set(E.Object);
        else
          S.MaySync.reset(E.Object);
      }
      recordWrite(I, E.Origin, std::move(Clobbered), Result, Visit);
      // Under no_grad the output carries no history at all, and nothing is
      // saved. The conditions read the inputs before the output replaces
      // one of them.
      Origins P;
      llvm::SmallVector<TensorSetId, 2> Saved;
      if (E.GradEnabled)
        savedSets(S, E, /*AfterStorage=*/false, Saved);
      setStorage(S, E);
      if (E.GradEnabled) {
        savedSets(S, E, /*AfterStorage=*/true, Saved);
        if (Object.HasBuffers)
          S.SavedBy[Object.Buffers].set(E.Origin);
        for (TensorSetId Set : Saved)
          S.SavedBy[Set].set(E.Origin);
        P = provenanceOf(S, E.Sources);
        P.set(E.Origin);
        S.Live.set(E.Origin);
      }
      S.Provenance[E.Target] = std::move(P);
      break;
    }
    case Event::Kind::Write: {
      Origins Clobbered;
      if (Result || Visit) {
        for (TensorSetId Set : E.Sets)
          Clobbered |= savers(S, Set);
        for (ValueId Through : E.Sources)
          if (auto It = S.Storage.find(Through); It != S.Storage.end())
            for (unsigned Set : It->second)
              Clobbered |= savers(S, Set);
      }
      recordWrite(I, E.Origin, std::move(Clobbered), Result, Visit);
      break;
    }
    case Event::Kind::Backward: {
      Origins P = provenanceOf(S, E.Sources);
      // Gradients without create_graph have no history; with it, theirs
      // runs through the nodes of the roots' graphs, so a backward through
      // them traverses those graphs again (a gradient penalty).
      if (E.ReturnsGradients)
        S.Provenance[E.Target] = E.CreateGraph ? P : Origins();
      // The gradients' graph saves what the traversed nodes saved (the
      // double-backward formulas take BatchNorm's running statistics and
      // mul's other operand), so create_graph keeps those graphs' saved
      // buffers in use even where retain_graph frees the graphs themselves.
      bool Keeps = E.RetainGraph || E.CreateGraph;
      bool ThroughUnknown = P.test(Unknown);
      P.reset(Unknown);
      if (ThroughUnknown)
        P |= S.Live;
      // A backward that accumulates into an object's parameters re-arms its
      // once-per-backward broadcast; autograd::grad accumulates into none.
      // History from an input or of unknown origin may reach any object.
      if (!E.ReturnsGradients)
        for (ObjectId O = 0; O < G.numObjects(); ++O)
          if (G.object(O).OncePerBackward &&
              (ThroughUnknown || P.intersects(ObjectForwards[O]) ||
               !(P - AllForwards).empty())) {
            S.MayFollowBackward.set(O);
            S.LiveWhenArmed |= (Keeps ? S.Live : S.Live - P) &
                               ObjectForwards[O];
          }
      if (Result) {
        Index->BlockBackwards[B].push_back(
            {I, static_cast<unsigned>(Result->Backwards.size())});
        Result->Backwards.push_back(
            {E.Site, dense(P, NumOrigins), Keeps, ThroughUnknown});
        Traversed.push_back(P);
      }
      if (!Keeps) {
        Origins Dead = S.Live & P;
        S.Live.intersectWithComplement(P);
        if (Visit && !Dead.empty())
          Visit->Kills.push_back({I, std::move(Dead)});
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

void HazardAnalyzer::anticipate(AnalysisResult &Result) {
  auto Blocks = G.blocks();
  BackwardIndex &X = *Index;
  std::vector<std::vector<unsigned>> Predecessors(Blocks.size());
  for (unsigned B = 0; B < Blocks.size(); ++B)
    if (Reached[B])
      for (unsigned Succ : Blocks[B].Successors)
        Predecessors[Succ].push_back(B);

  // Pass 2, over the final states: anticipated at each block's exit. A
  // backward adds the graphs it traverses (those it kills are anticipated
  // right there); an edge that drops a graph stops it.
  std::vector<Origins> Out(Blocks.size());
  // Only forwards live at a block's entry can have pairs there.
  auto In = [&](unsigned B) {
    Origins A = Out[B];
    for (const BackwardIndex::BackwardAt &At : X.BlockBackwards[B])
      A |= Traversed[At.Use];
    A &= X.FinalLiveIn[B];
    return A;
  };
  std::deque<unsigned> Worklist;
  std::vector<bool> Queued(Blocks.size(), false);
  for (unsigned B = Blocks.size(); B-- > 0;)
    if (Reached[B] && !X.BlockBackwards[B].empty()) {
      Queued[B] = true;
      Worklist.push_back(B);
    }
  while (!Worklist.empty()) {
    unsigned B = Worklist.front();
    Worklist.pop_front();
    Queued[B] = false;
    Origins A = In(B);
    for (unsigned Pred : Predecessors[B]) {
      const auto &Succs = Blocks[Pred].Successors;
      bool Changed = false;
      for (unsigned I = 0; I < Succs.size(); ++I) {
        if (Succs[I] != B)
          continue;
        auto Kills = X.EdgeKills.find({Pred, I});
        if (Kills == X.EdgeKills.end())
          Changed |= Out[Pred] |= A;
        else
          Changed |= Out[Pred] |= A - Kills->second;
      }
      if (Changed && !Queued[Pred]) {
        Queued[Pred] = true;
        Worklist.push_back(Pred);
      }
    }
  }

  // F2 clobbers the forwards live before it that are anticipated after it.
  llvm::DenseMap<OriginId, Origins> Firsts;
  llvm::DenseMap<unsigned, llvm::SmallVector<std::pair<unsigned, OriginId>, 2>>
      ForwardsByBlock;
  for (const auto &[Second, Live] : X.FinalLiveBefore)
    ForwardsByBlock[X.ForwardPositions[Second].first].push_back(
        {X.ForwardPositions[Second].second, Second});
  for (auto &[B, Forwards] : ForwardsByBlock) {
    llvm::sort(Forwards, [](const auto &L, const auto &R) { return L.first > R.first; });
    Origins A = Out[B];
    auto Backward = X.BlockBackwards[B].rbegin(), End = X.BlockBackwards[B].rend();
    for (auto [Event, Second] : Forwards) {
      for (; Backward != End && Backward->Event > Event; ++Backward)
        A |= Traversed[Backward->Use];
      Origins Made = X.FinalLiveBefore[Second] & A;
      if (!Made.empty())
        Firsts[Second] |= Made;
    }
  }

  // Pass 3, back through pass 1's visits in reverse time order. Accumulated
  // holds, per block, what is anticipated in its entry state just before its
  // next visit (after the last one: its final entry).
  std::vector<Origins> Accumulated(Blocks.size());
  for (unsigned B = 0; B < Blocks.size(); ++B)
    if (Reached[B])
      Accumulated[B] = In(B);
  Out.clear();
  for (unsigned V = X.Visits.size(); V-- > 0;) {
    const BackwardIndex::Visit &Visit = X.Visits[V];
    unsigned B = Visit.Block;
    Origins A;
    const auto &Succs = Blocks[B].Successors;
    for (unsigned I = 0; I < Succs.size(); ++I) {
      const Origins *Dropped = nullptr;
      for (const auto &[Index, Dead] : Visit.EdgeKills)
        if (Index == I)
          Dropped = &Dead;
      if (Dropped)
        A |= Accumulated[Succs[I]] - *Dropped;
      else
        A |= Accumulated[Succs[I]];
    }
    // Kills and pairs by event, last first.
    auto Kill = Visit.Kills.rbegin(), KillEnd = Visit.Kills.rend();
    for (auto Gen = Visit.Generations.rbegin(); Gen != Visit.Generations.rend();
         ++Gen) {
      for (; Kill != KillEnd && Kill->Event > Gen->Event; ++Kill)
        A.intersectWithComplement(Kill->Dead);
      Origins Made = Gen->Live & A;
      if (!Made.empty())
        Firsts[Gen->Second] |= Made;
    }
    for (; Kill != KillEnd; ++Kill)
      A.intersectWithComplement(Kill->Dead);
    A |= Accumulated[B];
    A &= X.EntryLive[Visit.Live];
    Accumulated[B] = std::move(A);
  }

  for (auto &[Second, Made] : Firsts) {
    bool SilentWriter = G.isWriteOrigin(Second) && G.eventOf(Second).Silent;
    Origins Hooked;
    if (!SilentWriter)
      for (OriginId Saver : Made)
        if ((G.isForwardOrigin(Saver) || G.isOpOrigin(Saver)) &&
            G.eventOf(Saver).SavesUnderHooks)
          Hooked.set(Saver);
    if (!Hooked.empty()) {
      Made.intersectWithComplement(Hooked);
      Result.Clobbers.push_back({Second, std::move(Hooked), true});
    }
    if (!Made.empty())
      Result.Clobbers.push_back({Second, std::move(Made), SilentWriter});
  }
  llvm::stable_sort(Result.Clobbers, [](const Clobber &L, const Clobber &R) {
    return L.Writer < R.Writer;
  });
}

AnalysisResult HazardAnalyzer::run() {
  auto Blocks = G.blocks();
  AnalysisResult Result;
  Result.ReturnedOrigins.resize(NumOrigins);
  if (Blocks.empty())
    return Result;
  Result.Index = std::make_unique<BackwardIndex>();
  Index = Result.Index.get();
  Index->BlockBackwards.resize(Blocks.size());
  Index->VisitsOf.resize(Blocks.size());
  Index->FinalLiveIn.resize(Blocks.size());
  Index->ForwardPositions.assign(NumOrigins, {None, None});
  ObjectForwards.resize(G.numObjects());
  for (OriginId O = 0; O < NumOrigins; ++O)
    if (G.isForwardOrigin(O)) {
      Index->ForwardPositions[O] = G.eventPosition(O);
      ObjectForwards[G.forwardOf(O).Object].set(O);
      AllForwards.set(O);
    } else if (G.isOpOrigin(O)) {
      Index->ForwardPositions[O] = G.eventPosition(O);
      AllForwards.set(O);
    } else if (G.isWriteOrigin(O)) {
      Index->ForwardPositions[O] = G.eventPosition(O);
    }
  for (const Block &B : Blocks)
    Index->Successors.push_back(B.Successors);
  computeLiveness();

  // Pass 1.
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
    BackwardIndex::Visit Visit;
    Visit.Block = B;
    // The block's last visit had the same live forwards, or fewer.
    Visit.Live = None;
    if (!Index->VisitsOf[B].empty()) {
      unsigned Last = Index->Visits[Index->VisitsOf[B].back()].Live;
      if (Index->EntryLive[Last] == In[B].Live)
        Visit.Live = Last;
    }
    if (Visit.Live == None) {
      Visit.Live = Index->EntryLive.size();
      Index->EntryLive.push_back(In[B].Live);
    }
    State Out = In[B];
    transfer(B, Out, nullptr, &Visit);
    for (unsigned I = 0, E = Blocks[B].Successors.size(); I < E; ++I) {
      unsigned Succ = Blocks[B].Successors[I];
      // Pruning before the join keeps the join monotone.
      State Into = I + 1 == E ? std::move(Out) : Out;
      Origins Dropped = prune(Into, Succ);
      if (!Dropped.empty())
        Visit.EdgeKills.push_back({I, std::move(Dropped)});
      if (In[Succ].join(Into) && !Queued[Succ]) {
        Queued[Succ] = true;
        Worklist.push_back(Succ);
      }
    }
    Index->VisitsOf[B].push_back(Index->Visits.size());
    Index->Visits.push_back(std::move(Visit));
  }

  // The final states.
  State Exit;
  Reached.assign(Blocks.size(), false);
  for (unsigned B = 0; B < Blocks.size(); ++B) {
    if (!In[B].Reached)
      continue;
    Reached[B] = true;
    State Out = std::move(In[B]);
    Index->FinalLiveIn[B] = Out.Live;
    transfer(B, Out, &Result, nullptr);
    for (unsigned I = 0; I < Blocks[B].Successors.size(); ++I) {
      Origins Dropped = dropped(Out, Blocks[B].Successors[I]);
      if (!Dropped.empty())
        Index->EdgeKills[{B, I}] = std::move(Dropped);
    }
    if (Blocks[B].Successors.empty())
      Exit.join(Out);
  }
  In.clear();
  for (const auto &[Value, P] : Exit.Provenance)
    Result.ExitProvenance[Value] = dense(P, NumOrigins);

  anticipate(Result);

  if (Options.ListHazards) {
    for (const Clobber &C : Result.Clobbers)
      for (unsigned First : C.Savers)
        for (SiteId Backward : Result.backwardsThrough(First, C.Writer))
          Result.Hazards.push_back({First, C.Writer, Backward});
    auto Key = [](const Hazard &H) {
      return std::make_tuple(H.Writer, H.Saver, H.Backward);
    };
    llvm::sort(Result.Hazards, [&](const Hazard &A, const Hazard &B) {
      return Key(A) < Key(B);
    });
  }
  return Result;
}

AnalysisResult analyzeHazards(const EventGraph &Graph,
                              AnalysisOptions Options) {
  return HazardAnalyzer(Graph, Options).run();
}

} // namespace model
} // namespace ddpguard
