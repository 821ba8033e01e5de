//===- TranslationUnitAnalysis.cpp ----------------------------------------===//

#include "TranslationUnitAnalysis.h"
#include "clang/AST/DeclCXX.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/StmtCXX.h"

using namespace clang;
using namespace ddpguard::model;

namespace ddpguard {
namespace clangfe {

TranslationUnitAnalysis::TranslationUnitAnalysis(ASTContext &Context,
                                                 const RuleSet &Rules,
                                                 bool AssumeModulesHaveBuffers,
                                                 TorchVersion Version)
    : Context(Context), Version(Version),
      Objects(Context, Rules, AssumeModulesHaveBuffers) {}

void TranslationUnitAnalysis::addCandidate(const FunctionDecl *Function) {
  // LibTorch's own code, included with -I, is no candidate.
  if (!isLibraryDecl(Function))
    Candidates.push_back(Function);
}

static bool isBackwardCall(const CallExpr *Call) {
  const FunctionDecl *Callee = Call->getDirectCallee();
  if (!Callee || !Callee->getIdentifier())
    return false;
  if (isa<CXXMemberCallExpr>(Call))
    return Callee->getName() == "backward";
  std::string Name = Callee->getQualifiedNameAsString();
  return Name == "torch::autograd::backward" || Name == "torch::autograd::grad";
}

const TranslationUnitAnalysis::ScanInfo &
TranslationUnitAnalysis::scan(const FunctionDecl *Function) {
  auto [It, Inserted] = Scans.try_emplace(Function);
  if (!Inserted)
    return It->second;
  ScanInfo Info;
  const SourceManager &SM = Context.getSourceManager();
  forEachStmt(Function->getBody(), [&](const Stmt *S) {
    if (std::optional<ForwardCall> Forward = Objects.matchForward(S)) {
      Info.DirectForward |= Forward->Object != nullptr;
      return;
    }
    if (const auto *Call = dyn_cast<CallExpr>(S)) {
      Info.DirectBackward |= isBackwardCall(Call);
      if (const auto *Member = dyn_cast<CXXMemberCallExpr>(Call))
        if (const CXXMethodDecl *Method = Member->getMethodDecl())
          Info.DirectStep |=
              Method->getIdentifier() && Method->getName() == "step";
      Info.DirectParameterWrite =
          Info.DirectParameterWrite || Modules.matchParameterWrite(Call);
      Info.DirectTensorWrite =
          Info.DirectTensorWrite || matchTensorWrite(Call).has_value();
      Info.DirectSilentWrite = Info.DirectSilentWrite || Info.DirectStep ||
                               Modules.matchDataWrite(Call);
      if (const FunctionDecl *Callee = visibleCallee(Call, SM)) {
        Info.Callees.push_back(Callee);
      } else if (const FunctionDecl *Opaque = Call->getDirectCallee()) {
        const FunctionDecl *Definition = nullptr;
        Info.DirectOutOfSight |=
            !Opaque->hasBody(Definition) && !isLibraryDecl(Opaque);
      }
    }
    if (const auto *Member = dyn_cast<MemberExpr>(S))
      Info.DirectOutOfSight |= isa<FieldDecl>(Member->getMemberDecl());
    if (const auto *Ref = dyn_cast<DeclRefExpr>(S))
      if (const auto *Var = dyn_cast<VarDecl>(Ref->getDecl()))
        Info.DirectOutOfSight |= Var->hasGlobalStorage() &&
                                 !Var->getType().isConstQualified();
    // A lambda may run here: called directly, or by a library algorithm.
    if (const auto *Lambda = dyn_cast<LambdaExpr>(S)) {
      bool Inline = false;
      for (const CXXMethodDecl *Operator : callOperators(Lambda, Inline))
        if (Operator->hasBody() && !Operator->isDependentContext())
          Info.Callees.push_back(Operator);
    }
  });
  Scans[Function] = std::move(Info);
  return Scans[Function];
}

bool TranslationUnitAnalysis::forwardsTransitively(const FunctionDecl *Function) {
  auto [It, Inserted] = Forwards.try_emplace(Function, false);
  if (!Inserted)
    return It->second;
  ScanInfo Info = scan(Function);
  bool Result = Info.DirectForward;
  for (const FunctionDecl *Callee : Info.Callees)
    Result = Result || forwardsTransitively(Callee);
  Forwards[Function] = Result;
  return Result;
}

bool TranslationUnitAnalysis::needsSummary(const FunctionDecl *Function) {
  auto [It, Inserted] = NeedsSummary.try_emplace(Function, false);
  if (!Inserted)
    return It->second;
  ScanInfo Info = scan(Function);
  bool Result = Info.DirectBackward || forwardsTransitively(Function);
  for (const FunctionDecl *Callee : Info.Callees)
    Result = Result || needsSummary(Callee);
  NeedsSummary[Function] = Result;
  return Result;
}

bool TranslationUnitAnalysis::reachesOutOfSight(const FunctionDecl *Function) {
  auto [It, Inserted] = OutOfSight.try_emplace(Function, false);
  if (!Inserted)
    return It->second;
  ScanInfo Info = scan(Function);
  bool Result = Info.DirectOutOfSight;
  for (const FunctionDecl *Callee : Info.Callees)
    Result = Result || reachesOutOfSight(Callee);
  OutOfSight[Function] = Result;
  return Result;
}

const TranslationUnitAnalysis::Analysed &
TranslationUnitAnalysis::analyse(const FunctionDecl *Function) {
  std::unique_ptr<Analysed> &Slot = Analyses[Function];
  if (!Slot) {
    InProgress.insert(Function);
    auto A = std::make_unique<Analysed>();
    A->Translation = translateFunction(Function, Objects, *this);
    // A broadcast that puts the version counters back overwrites the saved
    // buffers without autograd noticing: for the hazard it does not clobber.
    TranslatedFunction &T = A->Translation;
    for (ObjectId O = 0; O < T.Graph.numObjects(); ++O)
      if (const WrapperRule *Rule = Objects.construction(T.Objects[O]).Rule;
          Rule && Rule->preservesVersionCounters(Version))
        T.Graph.object(O).BroadcastsBuffers = false;
    model::AnalysisOptions Options;
    Options.ListHazards = false;
    A->Result = analyzeHazards(A->Translation.Graph, Options);
    InProgress.erase(Function);
    Analyses[Function] = std::move(A);
  }
  return *Analyses[Function];
}

const Summary *TranslationUnitAnalysis::summaryFor(const FunctionDecl *Callee) {
  if (InProgress.contains(Callee) || !needsSummary(Callee))
    return nullptr;
  std::unique_ptr<Summary> &Slot = Summaries[Callee];
  if (!Slot) {
    const Analysed &A = analyse(Callee);
    Summaries[Callee] = std::make_unique<Summary>(summarise(A));
  }
  return Summaries[Callee].get();
}

static SourceLocation innermost(const Site &S) {
  return S.Via ? S.Inner : S.Call->getBeginLoc();
}

Summary TranslationUnitAnalysis::summarise(const Analysed &A) {
  const TranslatedFunction &T = A.Translation;
  const FunctionDecl *Function = T.Function;
  Summary Sum;
  if (T.Failed)
    return Sum;
  llvm::DenseMap<OriginId, unsigned> EffectOfOrigin;
  llvm::DenseMap<SiteId, const BackwardUse *> Backwards;
  for (const BackwardUse &Use : A.Result.Backwards)
    Backwards[Use.Site] = &Use;

  for (unsigned B : T.Order) {
    for (const Event &E : T.Graph.blocks()[B].Events) {
      if (E.EventKind == Event::Kind::Forward) {
        const ValueDecl *Object = T.Objects[E.Object];
        Summary::Effect Effect;
        Effect.Loc = innermost(T.Sites[E.Site]);
        Effect.GradEnabled = E.GradEnabled;
        Effect.Repeats = T.InLoop[B] || T.Sites[E.Site].Repeats;
        Effect.Returned = A.Result.ReturnedOrigins.test(E.Origin);
        Effect.Object = Object;
        if (const auto *Param = dyn_cast<ParmVarDecl>(Object)) {
          auto Params = Function->parameters();
          auto Found = llvm::find(Params, Param);
          if (Found == Params.end())
            continue;
          Effect.Kind = Summary::ObjectKind::Parameter;
          Effect.Parameter = Found - Params.begin();
        } else if (isa<FieldDecl>(Object)) {
          Effect.Kind = Summary::ObjectKind::Member;
        } else if (const auto *Var = dyn_cast<VarDecl>(Object)) {
          // The helper's own locals are invisible to its callers.
          if (Var->isLocalVarDecl() && Var->getDeclContext() == Function)
            continue;
          Effect.Kind = Summary::ObjectKind::Variable;
        }
        EffectOfOrigin[E.Origin] = Sum.Effects.size();
        Sum.Effects.push_back(Effect);
      } else if (E.EventKind == Event::Kind::Backward) {
        auto Use = Backwards.find(E.Site);
        if (Use == Backwards.end())
          continue;
        Summary::Effect Effect;
        Effect.IsForward = false;
        Effect.Loc = innermost(T.Sites[E.Site]);
        Effect.RetainGraph = E.RetainGraph;
        Effect.ThroughUnknown = Use->second->ThroughUnknown;
        Effect.ThroughEscaped =
            T.EscapedPool && Use->second->Origins.test(T.EscapedOrigin);
        for (unsigned P = 0; P < T.ParameterOrigins.size(); ++P)
          if (Use->second->Origins.test(T.ParameterOrigins[P]))
            Effect.ParameterRoots.push_back(P);
        for (const Capture &C : T.Captures)
          if (Use->second->Origins.test(C.Origin))
            Effect.CaptureRoots.push_back(C.Variable);
        for (int O : Use->second->Origins.set_bits()) {
          auto Forward = EffectOfOrigin.find(O);
          if (Forward != EffectOfOrigin.end())
            Effect.ForwardRoots.push_back(Forward->second);
        }
        Sum.Effects.push_back(Effect);
      }
    }
  }
  // Forward outputs stored into containers passed by reference.
  for (unsigned P = 0; P < Function->getNumParams(); ++P) {
    QualType Type = Function->getParamDecl(P)->getType();
    if (!Type->isLValueReferenceType() ||
        Type.getNonReferenceType().isConstQualified())
      continue;
    auto Exit = A.Result.ExitProvenance.find(T.ParameterValues[P]);
    if (Exit == A.Result.ExitProvenance.end())
      continue;
    for (int O : Exit->second.set_bits()) {
      auto Forward = EffectOfOrigin.find(O);
      if (Forward != EffectOfOrigin.end())
        Sum.StoredOutputs.push_back({P, Forward->second});
    }
  }
  // What escapes from the helper, and what of the caller's escaped values
  // it hands back.
  if (T.EscapedPool) {
    Sum.ReturnsEscaped = A.Result.ReturnedOrigins.test(T.EscapedOrigin);
    for (ValueId V : T.Graph.escaping()) {
      auto Exit = A.Result.ExitProvenance.find(V);
      if (Exit == A.Result.ExitProvenance.end())
        continue;
      for (int O : Exit->second.set_bits()) {
        auto Forward = EffectOfOrigin.find(O);
        if (Forward != EffectOfOrigin.end()) {
          if (!llvm::is_contained(Sum.EscapedForwards, Forward->second))
            Sum.EscapedForwards.push_back(Forward->second);
          continue;
        }
        auto Parameter = llvm::find(T.ParameterOrigins, unsigned(O));
        if (Parameter != T.ParameterOrigins.end() &&
            !llvm::is_contained(Sum.EscapedParameters,
                                Parameter - T.ParameterOrigins.begin()))
          Sum.EscapedParameters.push_back(Parameter -
                                          T.ParameterOrigins.begin());
      }
    }
  }
  // Forward outputs stored into variables captured by reference, and
  // captured histories handed back.
  for (const Capture &C : T.Captures) {
    if (A.Result.ReturnedOrigins.test(C.Origin))
      Sum.ReturnedCaptures.push_back(C.Variable);
    if (!C.ByReference)
      continue;
    auto Exit = A.Result.ExitProvenance.find(C.Value);
    if (Exit == A.Result.ExitProvenance.end())
      continue;
    for (int O : Exit->second.set_bits()) {
      auto Forward = EffectOfOrigin.find(O);
      if (Forward != EffectOfOrigin.end())
        Sum.StoredCaptures.push_back({C.Variable, Forward->second});
    }
  }
  return Sum;
}

const Stmt *TranslationUnitAnalysis::commonLoop(const FunctionDecl *Function,
                                                SourceLocation A,
                                                SourceLocation B) {
  const SourceManager &SM = Context.getSourceManager();
  auto [It, Inserted] = Loops.try_emplace(Function);
  if (Inserted)
    forEachStmt(Function->getBody(), [&](const Stmt *S) {
      if (isa<ForStmt, WhileStmt, DoStmt, CXXForRangeStmt>(S))
        It->second.push_back(S);
    });
  const Stmt *Best = nullptr;
  auto Contains = [&](SourceRange Range, SourceLocation L) {
    return !SM.isBeforeInTranslationUnit(L, Range.getBegin()) &&
           !SM.isBeforeInTranslationUnit(Range.getEnd(), L);
  };
  for (const Stmt *S : It->second)
    if (Contains(S->getSourceRange(), A) && Contains(S->getSourceRange(), B))
      Best = S; // Visited outside-in, so the last one is the innermost.
  return Best;
}

void TranslationUnitAnalysis::report(const Analysed &A,
                                     std::vector<Finding> &Findings) {
  const TranslatedFunction &T = A.Translation;
  const SourceManager &SM = Context.getSourceManager();
  // Each second forward's call is reported once, naming the hazard with the
  // earliest first forward (by location), then the smallest second forward,
  // first forward and backward (by number). Hazards wholly inside one helper
  // call are reported in the helper itself.
  auto CallOf = [&](OriginId O) -> const Site & {
    return T.Sites[T.Graph.forwardOf(O).Site];
  };
  // Ranks of the forwards by their call's location; equal locations share one.
  std::vector<OriginId> ByLocation;
  for (OriginId O = 0; O < T.Graph.numOrigins(); ++O)
    if (T.Graph.isForwardOrigin(O))
      ByLocation.push_back(O);
  auto Earlier = [&](OriginId L, OriginId R) {
    return SM.isBeforeInTranslationUnit(CallOf(L).Call->getBeginLoc(),
                                        CallOf(R).Call->getBeginLoc());
  };
  llvm::stable_sort(ByLocation, Earlier);
  llvm::DenseMap<OriginId, unsigned> Rank;
  for (unsigned I = 0; I < ByLocation.size(); ++I)
    Rank[ByLocation[I]] =
        I > 0 && !Earlier(ByLocation[I - 1], ByLocation[I])
            ? Rank[ByLocation[I - 1]]
            : I;

  struct Choice {
    unsigned Rank;
    OriginId First;
    SiteId Backward;
  };
  llvm::DenseMap<const Expr *, std::pair<size_t, unsigned>> BySecond;
  for (const Clobber &C : A.Result.Clobbers) {
    OriginId SecondOrigin = C.Writer;
    const Site &Second = CallOf(SecondOrigin);
    auto InSameCall = [&](OriginId First) {
      return Second.Via && CallOf(First).Call == Second.Call;
    };
    // The best first forward outside the second's helper call: any of its
    // backwards will do, so the smallest is named.
    std::optional<std::pair<unsigned, OriginId>> Outside;
    std::vector<std::pair<unsigned, OriginId>> Inside;
    for (unsigned First : C.Savers) {
      std::pair<unsigned, OriginId> Key{Rank[First], First};
      if (InSameCall(First))
        Inside.push_back(Key);
      else if (!Outside || Key < *Outside)
        Outside = Key;
    }
    std::optional<Choice> Best;
    // One inside the call counts only with a backward outside it.
    llvm::sort(Inside);
    for (auto [FirstRank, First] : Inside) {
      if (Outside && !(std::make_pair(FirstRank, First) < *Outside))
        break;
      if (std::optional<SiteId> Backward = A.Result.firstBackward(
              First, SecondOrigin, [&](SiteId B) {
                return T.Sites[B].Call == Second.Call;
              })) {
        Best = Choice{FirstRank, First, *Backward};
        break;
      }
    }
    if (!Best && Outside)
      if (std::optional<SiteId> Backward =
              A.Result.firstBackward(Outside->second, SecondOrigin))
        Best = Choice{Outside->first, Outside->second, *Backward};
    if (!Best)
      continue;

    auto [It, Inserted] =
        BySecond.try_emplace(Second.Call, Findings.size(), Best->Rank);
    // A later second forward of the same call replaces the finding only with
    // a strictly earlier first forward.
    if (!Inserted && Best->Rank >= It->second.second)
      continue;
    Finding F;
    F.Function = T.Function;
    F.Object = T.Objects[T.Graph.forwardOf(SecondOrigin).Object];
    F.Second = Second;
    F.First = CallOf(Best->First);
    F.Backward = T.Sites[Best->Backward];
    F.FirstOrigin = Best->First;
    F.SecondOrigin = SecondOrigin;
    SourceLocation FirstLoc = F.First.Call->getBeginLoc();
    SourceLocation SecondLoc = F.Second.Call->getBeginLoc();
    auto [FirstBlock, FirstIndex] = T.Graph.eventPosition(Best->First);
    auto [SecondBlock, SecondIndex] = T.Graph.eventPosition(SecondOrigin);
    F.RepeatedInCall = F.First.Call == F.Second.Call && F.Second.Repeats &&
                       FirstBlock == SecondBlock && FirstIndex < SecondIndex;
    if (!F.RepeatedInCall &&
        (F.First.Call == F.Second.Call ||
         SM.isBeforeInTranslationUnit(SecondLoc, FirstLoc)))
      F.Loop = commonLoop(T.Function, FirstLoc, SecondLoc);
    if (Inserted) {
      Findings.push_back(F);
    } else {
      Findings[It->second.first] = F;
      It->second.second = Best->Rank;
    }
  }
}

void TranslationUnitAnalysis::noteEscapes(const Analysed &A,
                                          llvm::MutableArrayRef<Finding> Findings) {
  const TranslatedFunction &T = A.Translation;
  if (Findings.empty() || T.Escapes.empty() || T.EscapedReads.empty() ||
      !T.EscapedPool)
    return;
  // The same events with calls we cannot see handing back only their
  // arguments' history: a finding it lacks rests on the escape.
  model::AnalysisOptions Analysis;
  Analysis.ListHazards = false;
  AnalysisResult WithoutResult =
      analyzeHazards(T.Graph.withoutReadsOf(*T.EscapedPool), Analysis);
  const SourceManager &SM = Context.getSourceManager();
  const auto &Blocks = T.Graph.blocks();
  // Whether control reaches position (ToBlock, ToIndex) from (FromBlock,
  // FromIndex): later in the same block, or through the successors.
  auto Reaches = [&](unsigned FromBlock, unsigned FromIndex, unsigned ToBlock,
                     unsigned ToIndex) {
    if (FromBlock == ToBlock && FromIndex <= ToIndex)
      return true;
    std::vector<bool> Seen(Blocks.size(), false);
    std::vector<unsigned> Work(Blocks[FromBlock].Successors.begin(),
                               Blocks[FromBlock].Successors.end());
    while (!Work.empty()) {
      unsigned B = Work.back();
      Work.pop_back();
      if (B == ToBlock)
        return true;
      if (Seen[B])
        continue;
      Seen[B] = true;
      llvm::append_range(Work, Blocks[B].Successors);
    }
    return false;
  };
  auto Before = [&](const EscapePoint &L, const EscapePoint &R) {
    return SM.isBeforeInTranslationUnit(L.At->getBeginLoc(),
                                        R.At->getBeginLoc());
  };
  for (Finding &F : Findings) {
    if (WithoutResult.firstBackward(F.FirstOrigin, F.SecondOrigin))
      continue;
    // The notes name an escape after the first forward and a read after
    // that escape: a value escapes only into calls that run after it.
    auto [ForwardBlock, ForwardIndex] = T.Graph.eventPosition(F.FirstOrigin);
    const EscapePoint *Escape = nullptr, *Read = nullptr;
    for (const EscapePoint &R : T.EscapedReads)
      for (const EscapePoint &E : T.Escapes)
        if (Reaches(ForwardBlock, ForwardIndex, E.Block, E.Index) &&
            Reaches(E.Block, E.Index, R.Block, R.Index) &&
            (!Read || Before(R, *Read) ||
             (R.At == Read->At && Before(E, *Escape)))) {
          Read = &R;
          Escape = &E;
        }
    if (!Read)
      continue;
    F.Escape = Escape->At;
    F.EscapedRead = Read->At;
  }
}

void TranslationUnitAnalysis::noteOncePerBackward(
    const Analysed &A, llvm::MutableArrayRef<Finding> Findings) {
  const TranslatedFunction &T = A.Translation;
  // The same events with the policy set on every object that lacks it;
  // objects never interact, so one analysis answers for each of them. The
  // policy broadcasts at a subset of the forwards, so it adds no hazard.
  EventGraph Graph = T.Graph;
  bool Asks = false;
  for (ObjectId O = 0; O < Graph.numObjects(); ++O) {
    const Construction &C = Objects.construction(T.Objects[O]);
    if (!C.OncePerBackward && C.Rule && C.Rule->OncePerBackward.available() &&
        llvm::any_of(Findings,
                     [&](const Finding &F) { return F.Object == T.Objects[O]; })) {
      Graph.object(O).OncePerBackward = true;
      Asks = true;
    }
  }
  if (!Asks)
    return;
  model::AnalysisOptions Options;
  Options.ListHazards = false;
  AnalysisResult Result = analyzeHazards(Graph, Options);
  const SourceManager &SM = Context.getSourceManager();
  for (const Clobber &C : Result.Clobbers) {
    const Event &Second = Graph.forwardOf(C.Writer);
    if (!Graph.object(Second.Object).OncePerBackward)
      continue;
    std::optional<SiteId> Backward;
    for (unsigned First : C.Savers)
      if ((Backward = Result.firstBackward(First, C.Writer)))
        break;
    if (!Backward)
      continue;
    const Site &SecondSite = T.Sites[Second.Site];
    for (Finding &F : Findings)
      if (F.Object == T.Objects[Second.Object] &&
          (!F.OncePerBackwardFails ||
           SM.isBeforeInTranslationUnit(
               SecondSite.Call->getBeginLoc(),
               F.OncePerBackwardFails->first.Call->getBeginLoc())))
        F.OncePerBackwardFails = {SecondSite, T.Sites[*Backward]};
  }
}

std::vector<const FunctionDecl *>
TranslationUnitAnalysis::functionsToAnalyse() const {
  std::vector<const FunctionDecl *> Work = Candidates;
  // Lambda bodies are functions of their own.
  for (const FunctionDecl *Function : Candidates)
    forEachStmt(Function->getBody(), [&](const Stmt *S) {
      if (const auto *Lambda = dyn_cast<LambdaExpr>(S))
        if (const CXXMethodDecl *Call = Lambda->getCallOperator())
          if (Call->getBody() && !Call->isDependentContext())
            Work.push_back(Call);
    });
  return Work;
}

std::vector<Finding> TranslationUnitAnalysis::run() {
  std::vector<Finding> Findings;
  llvm::DenseSet<const FunctionDecl *> Done;
  for (const FunctionDecl *Function : functionsToAnalyse()) {
    if (!Done.insert(Function).second || !forwardsTransitively(Function))
      continue;
    const Analysed &A = analyse(Function);
    if (A.Translation.Failed)
      continue;
    size_t Before = Findings.size();
    report(A, Findings);
    llvm::MutableArrayRef<Finding> Found =
        llvm::MutableArrayRef<Finding>(Findings).drop_front(Before);
    noteEscapes(A, Found);
    noteOncePerBackward(A, Found);
  }
  const SourceManager &SM = Context.getSourceManager();
  llvm::stable_sort(Findings, [&](const Finding &A, const Finding &B) {
    return SM.isBeforeInTranslationUnit(A.Second.Call->getBeginLoc(),
                                        B.Second.Call->getBeginLoc());
  });
  return Findings;
}

} // namespace clangfe
} // namespace ddpguard

namespace ddpguard {
namespace clangfe {

void TranslationUnitAnalysis::reportWrites(
    const TranslatedFunction &T, const AnalysisResult &Result,
    WriteCheck Check, std::vector<WriteFinding> &Findings) {
  const SourceManager &SM = Context.getSourceManager();
  auto LocOf = [&](OriginId O) {
    return T.Sites[T.Graph.eventOf(O).Site].Call->getBeginLoc();
  };
  auto Reported = [&](SiteId Site) {
    auto SiteIs = [&](const auto &Entry) { return Entry.first == Site; };
    switch (Check) {
    case WriteCheck::Step:
      return llvm::any_of(T.Steps, SiteIs);
    case WriteCheck::Parameter:
      return llvm::any_of(T.ParameterWrites, SiteIs);
    case WriteCheck::Value:
      return llvm::any_of(T.ValueWrites, SiteIs);
    case WriteCheck::Silent:
      return llvm::any_of(T.SilentSteps, SiteIs) ||
             llvm::any_of(T.DataWrites, SiteIs);
    }
    return false;
  };
  bool Silent = Check == WriteCheck::Silent;
  for (const Clobber &C : Result.Clobbers) {
    if (!T.Graph.isWriteOrigin(C.Writer) || C.Silent != Silent ||
        !Reported(T.Graph.eventOf(C.Writer).Site))
      continue;
    const Event &Write = T.Graph.eventOf(C.Writer);
    // The first saver in the source whose graph a later backward traverses;
    // a silent write to parameters counts only the function's own
    // backwards, as a step does.
    std::optional<std::pair<OriginId, SiteId>> Best;
    for (unsigned Saver : C.Savers)
      if (std::optional<SiteId> Backward =
              Result.firstBackward(Saver, C.Writer))
        if ((!Best ||
             SM.isBeforeInTranslationUnit(LocOf(Saver), LocOf(Best->first))) &&
            !(Silent && !Write.Sets.empty() &&
              llvm::is_contained(T.ResultBackwards, *Backward)))
          Best = {Saver, *Backward};
    if (!Best)
      continue;
    WriteFinding F;
    F.Function = T.Function;
    F.Write = T.Sites[Write.Site];
    F.Forward = T.Sites[T.Graph.eventOf(Best->first).Site];
    F.Backward = T.Sites[Best->second];
    for (auto [Site, Opt] : T.Steps)
      if (Site == Write.Site)
        F.Opt = Opt;
    for (const auto &[Site, InPlace] : T.ParameterWrites)
      if (Site == Write.Site)
        F.InPlace = InPlace;
    for (const auto &[Site, OnValue] : T.ValueWrites)
      if (Site == Write.Site)
        F.OnValue = OnValue;
    for (auto [Site, Opt] : T.SilentSteps)
      if (Site == Write.Site)
        F.Opt = Opt;
    for (const auto &[Site, ThroughData] : T.DataWrites)
      if (Site == Write.Site)
        F.ThroughData = ThroughData;
    if (T.Graph.isOpOrigin(Best->first))
      F.Saver = F.Forward.Call;
    F.ThroughResult = llvm::is_contained(T.ResultBackwards, Best->second);
    for (auto [Set, Module] : T.ParameterSetModules)
      if (llvm::is_contained(Write.Sets, Set))
        F.Module = Module;
    SourceLocation WriteLoc = F.Write.Call->getBeginLoc();
    SourceLocation BackwardLoc = F.Backward.Call->getBeginLoc();
    if (!SM.isBeforeInTranslationUnit(WriteLoc, BackwardLoc))
      F.Loop = commonLoop(T.Function, WriteLoc, BackwardLoc);
    Findings.push_back(F);
  }
}

std::vector<WriteFinding>
TranslationUnitAnalysis::runWrites(WriteCheck Check, bool ScanInfo::*Writes) {
  std::vector<WriteFinding> Findings;
  llvm::DenseSet<const FunctionDecl *> Done;
  for (const FunctionDecl *Function : functionsToAnalyse()) {
    if (!Done.insert(Function).second)
      continue;
    ScanInfo Info = scan(Function);
    bool Silent = Check == WriteCheck::Silent;
    bool Value = Check == WriteCheck::Value || Silent;
    if (!(Info.*Writes) ||
        !(Info.DirectBackward || (Value && isModuleForward(Function)) ||
          llvm::any_of(Info.Callees, [&](const FunctionDecl *Callee) {
            return needsSummary(Callee);
          })))
      continue;
    TranslatedFunction T =
        translateFunction(Function, Objects, *this, &Modules, Value, Silent);
    bool Written = Check == WriteCheck::Step        ? !T.Steps.empty()
                   : Check == WriteCheck::Parameter ? !T.ParameterWrites.empty()
                   : Silent ? !T.SilentSteps.empty() || !T.DataWrites.empty()
                            : !T.ValueWrites.empty();
    if (T.Failed || !Written)
      continue;
    model::AnalysisOptions Options;
    Options.ListHazards = false;
    reportWrites(T, analyzeHazards(T.Graph, Options), Check, Findings);
  }
  const SourceManager &SM = Context.getSourceManager();
  llvm::stable_sort(Findings, [&](const WriteFinding &A, const WriteFinding &B) {
    return SM.isBeforeInTranslationUnit(A.Write.Call->getBeginLoc(),
                                        B.Write.Call->getBeginLoc());
  });
  return Findings;
}

std::vector<WriteFinding> TranslationUnitAnalysis::runSteps() {
  return runWrites(WriteCheck::Step, &ScanInfo::DirectStep);
}

std::vector<WriteFinding> TranslationUnitAnalysis::runParameterWrites() {
  return runWrites(WriteCheck::Parameter, &ScanInfo::DirectParameterWrite);
}

std::vector<WriteFinding> TranslationUnitAnalysis::runValueWrites() {
  return runWrites(WriteCheck::Value, &ScanInfo::DirectTensorWrite);
}

std::vector<WriteFinding> TranslationUnitAnalysis::runSilentWrites() {
  return runWrites(WriteCheck::Silent, &ScanInfo::DirectSilentWrite);
}

} // namespace clangfe
} // namespace ddpguard
