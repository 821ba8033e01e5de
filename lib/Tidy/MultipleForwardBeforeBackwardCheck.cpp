//===- MultipleForwardBeforeBackwardCheck.cpp -----------------------------===//

#include "MultipleForwardBeforeBackwardCheck.h"
#include "Fix/Fixes.h"
#include "Frontend/Callers.h"
#include "clang/AST/ASTContext.h"
#include "clang/ASTMatchers/ASTMatchFinder.h"
#include "llvm/Support/YAMLParser.h"

using namespace clang;
using namespace clang::ast_matchers;
using namespace ddpguard::clangfe;

namespace ddpguard {
namespace tidy {

/// A boolean option as clang-tidy's typed accessor reads one: the YAML
/// spellings (true/false, yes/no, on/off, y/n in lower, capitalised or upper
/// case) or an integer, non-zero being true.
static std::optional<bool> parseBoolOption(StringRef Value) {
  if (std::optional<bool> Parsed = llvm::yaml::parseBool(Value))
    return Parsed;
  long long Number;
  if (!Value.getAsInteger(10, Number))
    return Number != 0;
  return std::nullopt;
}

MultipleForwardBeforeBackwardCheck::MultipleForwardBeforeBackwardCheck(
    StringRef Name, clang::tidy::ClangTidyContext *Context)
    : RecordingCheck(Name, Context), RuleFiles(Options.get("RuleFiles", "")),
      FixMode(Options.get("FixMode", "broadcast")),
      AssumeModulesHaveBuffers(false),
      TorchVersionOption(Options.get("TorchVersion", "")),
      Rules(RuleSet::builtin()) {
  // The string accessors: the stock clang-tidy binary exports no
  // instantiation of the typed ones for plugins to use.
  std::string Assume =
      Options.get("AssumeModulesHaveBuffers", "false").str();
  if (std::optional<bool> Value = parseBoolOption(Assume))
    AssumeModulesHaveBuffers = *Value;
  else
    configurationDiag("invalid configuration value '%0' for option '%1'; "
                      "expected a bool")
        << Assume << (Name + ".AssumeModulesHaveBuffers").str();
  if (!StringRef(TorchVersionOption).trim().empty() &&
      !(VersionOverride = TorchVersion::parse(TorchVersionOption)))
    configurationDiag("invalid configuration value '%0' for option '%1'; "
                      "expected a LibTorch version such as 2.12.1")
        << TorchVersionOption << (Name + ".TorchVersion").str();
  llvm::SmallVector<StringRef, 4> Files;
  StringRef(RuleFiles).split(Files, ';', -1, /*KeepEmpty=*/false);
  for (StringRef File : Files)
    if (llvm::Error Err = Rules.addFile(File.trim()))
      configurationDiag("%0") << llvm::toString(std::move(Err));
  if (FixMode != "broadcast" && FixMode != "fuse" &&
      FixMode != "once-per-backward")
    configurationDiag("invalid FixMode '%0': expected 'broadcast', 'fuse' or "
                      "'once-per-backward'")
        << FixMode;
}

void MultipleForwardBeforeBackwardCheck::storeOptions(
    clang::tidy::ClangTidyOptions::OptionMap &Opts) {
  Options.store(Opts, "RuleFiles", RuleFiles);
  Options.store(Opts, "FixMode", FixMode);
  Options.store(Opts, "AssumeModulesHaveBuffers",
                AssumeModulesHaveBuffers ? "true" : "false");
  Options.store(Opts, "TorchVersion", TorchVersionOption);
}

void MultipleForwardBeforeBackwardCheck::registerMatchers(MatchFinder *Finder) {
  // Only function definitions outside system headers are candidates; the
  // analysis decides lazily which of them touch a DDP object.
  Finder->addMatcher(functionDecl(isDefinition(),
                                  unless(isExpansionInSystemHeader()),
                                  unless(isImplicit()))
                         .bind("function"),
                     this);
}

void MultipleForwardBeforeBackwardCheck::check(
    const MatchFinder::MatchResult &Result) {
  const auto *Function = Result.Nodes.getNodeAs<FunctionDecl>("function");
  if (!Analysis) {
    Context = Result.Context;
    recordWith(Context->getSourceManager());
    // Matchers run after the whole translation unit is preprocessed, so
    // every macro of <torch/version.h> is known by now.
    Judged = PP ? judgeVersion(*PP, VersionOverride) : JudgedVersion();
    Analysis = std::make_unique<TranslationUnitAnalysis>(
        *Result.Context, Rules, AssumeModulesHaveBuffers, Judged.Version);
    Fuser = std::make_unique<fix::FuseFixer>(Analysis->objects(), *Context);
  }
  if (Function->hasBody() && !Function->isDependentContext())
    Analysis->addCandidate(Function);
}

void MultipleForwardBeforeBackwardCheck::onEndOfTranslationUnit() {
  if (!Analysis)
    return;
  std::vector<Finding> Findings = Analysis->run();
  Fuser->setFindings(Findings);
  for (const Finding &F : Findings)
    report(F);
  Fuser.reset();
  Analysis.reset();
  ConstructionFixed.clear();
  FuseFixed.clear();
}

/// How a note names the function a forward or backward runs in.
static std::string describe(const FunctionDecl *Function) {
  if (const auto *Method = dyn_cast<CXXMethodDecl>(Function))
    if (Method->getParent()->isLambda())
      return "the lambda";
  return "'" + Function->getNameAsString() + "'";
}

static SourceLocation locationOf(const Site &S) {
  return S.AtInner ? S.Inner : S.Call->getBeginLoc();
}

/// The library algorithm (or other unseen function) that the site's call
/// hands a lambda to, if any.
static const FunctionDecl *algorithmOf(const Site &S) {
  const auto *Call = dyn_cast<CallExpr>(S.Call);
  const FunctionDecl *Callee = Call ? Call->getDirectCallee() : nullptr;
  const auto *Method = dyn_cast_or_null<CXXMethodDecl>(S.Via);
  if (!Callee || !Method || !Method->getParent()->isLambda() ||
      Callee->getCanonicalDecl() == Method->getCanonicalDecl())
    return nullptr;
  return Callee;
}

/// How a note names what runs a helper's or lambda's forward.
static std::string describeRunner(const Site &S) {
  if (const FunctionDecl *Algorithm = algorithmOf(S))
    return "'" + Algorithm->getQualifiedNameAsString() + "'";
  return describe(S.Via);
}

/// 'BufferBroadcast::kOncePerBackward' for 'ddpguard::BufferBroadcast::...':
/// the enumerator with its enum's name.
static std::string shortEnumerator(StringRef Qualified) {
  size_t Last = Qualified.rfind("::");
  if (Last == StringRef::npos || Last == 0)
    return Qualified.str();
  size_t Enum = Qualified.substr(0, Last).rfind("::");
  return Enum == StringRef::npos ? Qualified.str()
                                 : Qualified.substr(Enum + 2).str();
}

std::string MultipleForwardBeforeBackwardCheck::oncePerBackwardFailure(
    const Finding &F) const {
  const SourceManager &SM = Context->getSourceManager();
  const auto &[Second, Backward] = *F.OncePerBackwardFails;
  return "the forward at line " +
         std::to_string(SM.getPresumedLineNumber(locationOf(Second))) +
         " runs after a backward, so it would still broadcast over buffers "
         "that the backward at line " +
         std::to_string(
             SM.getPresumedLineNumber(Backward.Call->getExprLoc())) +
         " needs";
}

void MultipleForwardBeforeBackwardCheck::noteCallerConstructions(
    const Construction &C, StringRef Option) {
  for (const CallerSource &Source : C.Callers.Sources) {
    const Construction &From = *Source.From;
    // A temporary's construction stands for the parameter it is passed for.
    std::string Object = isa<ParmVarDecl>(From.Object)
                             ? "the temporary"
                             : "'" + From.Object->getNameAsString() + "'";
    std::string Setting = "'" + Option.str() + "' ";
    if (From.OncePerBackward)
      Setting = "buffers are broadcast once per backward";
    else if (From.Broadcast == BroadcastState::Unknown)
      Setting += "is set to a value not known at compile time; assuming true";
    else if (!From.broadcasts())
      Setting += "is false";
    else if (From.Broadcast == BroadcastState::SetTrue)
      Setting += "is set to true";
    else
      Setting += "is true by default";
    std::string Callee =
        describeCallee(Source.Calls.back()->getDirectCallee());
    std::string Path = Source.Calls.size() == 1
                           ? "is passed to " + Callee
                           : "reaches " + Callee + " through " +
                                 describeChain(Source);
    note(From.Expr->getBeginLoc(), "%0 is constructed here and %1; %2")
        << Object << Path << Setting;
  }
}

void MultipleForwardBeforeBackwardCheck::noteConstruction(
    const Finding &F, const Construction &C) {
  std::string Option = C.Rule->Broadcast.nameAt(Judged.Version);
  if (C.Callers.Complete) {
    noteCallerConstructions(C, Option);
    return;
  }
  std::string Name = F.Object->getNameAsString();
  switch (C.Broadcast) {
  case BroadcastState::SetTrue:
    note(C.Setting->getBeginLoc(), "'%0' is set to true here")
        << Option;
    break;
  case BroadcastState::Default:
    note(C.Expr ? C.Expr->getBeginLoc() : F.Object->getLocation(),
         "'%1' is true by default in this construction of '%0'")
        << Name << Option;
    break;
  case BroadcastState::Unknown:
  case BroadcastState::SetFalse:
    note(C.Setting ? C.Setting->getBeginLoc() : F.Object->getLocation(),
         C.Setting ? "'%1' is set here to a value not known at compile time; "
                     "assuming true"
                   : "'%0' is constructed out of sight; assuming '%1' is "
                     "true, the default",
         NoteKind::Assumption)
        << Name << Option;
    break;
  }
  if (const CallExpr *Factory = Analysis->objects().factoryCall(F.Object))
    note(Factory->getBeginLoc(), "'%0' is constructed by %1, called here")
        << Name << describeCallee(Factory->getDirectCallee());
  if (!C.Callers.WhyNot.empty())
    note(C.Callers.WhyNotLoc,
         "'%0' %1: %2", NoteKind::Assumption, NoteRole::CallersNotFollowed)
        << Name << NotFollowedNote << C.Callers.WhyNot;
}

void MultipleForwardBeforeBackwardCheck::report(const Finding &F) {
  const SourceManager &SM = Context->getSourceManager();
  const Construction &C = Analysis->objects().construction(F.Object);
  std::string Name = F.Object->getNameAsString();

  bool FuseFirst = FixMode == "fuse";
  bool OnceFirst = FixMode == "once-per-backward";
  // The fix at the construction: broadcast_buffers(false), or with
  // FixMode: once-per-backward the buffer policy, unless the object has it
  // already or it would leave a forward that still broadcasts.
  fix::FixOutcome Broadcast;
  if (!OnceFirst)
    Broadcast = fix::makeBroadcastFix(C, *Context, Judged.Version);
  else if (C.OncePerBackward)
    Broadcast.Reason = "'" + Name + "' broadcasts buffers once per backward "
                       "already";
  else if (F.OncePerBackwardFails)
    Broadcast.Reason = oncePerBackwardFailure(F);
  else
    Broadcast = fix::makeOncePerBackwardFix(C, *Context);
  fix::FixOutcome Fuse = Fuser->make(F);
  // One fix per construction and per fused run, whatever number of warnings.
  // A warning whose fix an earlier warning already carries offers no other
  // fix either: tools that take a note's fix when the warning has none
  // (clang-apply-replacements) must not mix the two fixes.
  bool BroadcastTaken = Broadcast.applies() &&
                        !fix::claimConstructions(Broadcast, ConstructionFixed);
  bool FuseTaken = Fuse.applies() && !FuseFixed.insert(F.First.Call).second;
  if (FuseFirst ? FuseTaken : BroadcastTaken) {
    Broadcast.Hints.clear();
    Fuse.Hints.clear();
  }
  if (BroadcastTaken)
    Broadcast.Hints.clear();
  if (FuseTaken)
    Fuse.Hints.clear();

  {
    auto Warning =
        warning(locationOf(F.Second),
             "forward call on DDP-wrapped '%0' before the backward of the "
             "forward at line %1: DDP broadcasts buffers %select{before every "
             "forward|at the first forward after a backward}2 and overwrites "
             "the buffers that forward saved for backward")
        << Name << SM.getPresumedLineNumber(locationOf(F.First))
        << C.OncePerBackward;
    for (const FixItHint &Hint : FuseFirst ? Fuse.Hints : Broadcast.Hints)
      Warning << Hint;
  }
  if (FuseFirst ? Fuse.applies() : Broadcast.applies())
    recordFix(FuseFirst || OnceFirst ? FixApplicability::Safe
                                     : FixApplicability::Unsafe,
              FuseFirst   ? "Fuse the forwards into one call"
              : OnceFirst ? "Broadcast buffers once per backward"
                          : "Set '" + C.Rule->Broadcast.nameAt(Judged.Version) +
                                "' to false at the construction");
  if (F.Second.AtInner && !F.RepeatedInCall)
    note(F.Second.Call->getBeginLoc(), "%0 runs the lambda here")
        << describeRunner(F.Second);
  else if (F.Second.Via && !F.Second.AtInner)
    note(F.Second.Inner, "the forward runs inside %0 here")
        << describe(F.Second.Via);

  if (F.RepeatedInCall)
    note(F.Second.Call->getBeginLoc(),
         "%0 may run the forward more than once in this call%select{|, once "
         "per element}1: each run broadcasts over the buffers the run before "
         "saved")
        << describeRunner(F.Second) << (algorithmOf(F.Second) != nullptr);
  else if (F.Loop)
    note(locationOf(F.First),
         "the forwards happen in different iterations of the loop at line %0",
         NoteKind::Place, NoteRole::EarlierForward)
        << SM.getPresumedLineNumber(F.Loop->getBeginLoc());
  else
    note(locationOf(F.First),
         "earlier forward on '%0' is here; its saved buffers are overwritten",
         NoteKind::Place, NoteRole::EarlierForward)
        << Name;
  if (F.First.Via && !F.First.AtInner &&
      !(F.Second.Via && F.First.Inner == F.Second.Inner))
    note(F.First.Inner, "the forward runs inside %0 here")
        << describe(F.First.Via);

  note(F.Backward.Call->getExprLoc(), "the backward that fails is here");
  if (F.EscapedRead) {
    // A visible helper hands back what the calls it makes may return.
    const auto *Read = dyn_cast<CallExpr>(F.EscapedRead);
    const FunctionDecl *Callee = Read ? Read->getDirectCallee() : nullptr;
    note(F.EscapedRead->getBeginLoc(),
         "assuming that this call%select{, whose body is not visible,|}0 may "
         "%select{return|hand back}0 the history of values that escaped "
         "earlier",
         NoteKind::Assumption)
        << (Callee && Callee->hasBody());
    note(F.Escape->getBeginLoc(),
         "a value derived from a forward escapes here, into code the checker "
         "cannot see");
  }
  if (F.Backward.Via)
    note(F.Backward.Inner, "the backward runs inside %0 here")
        << describe(F.Backward.Via);

  noteConstruction(F, C);

  // The module's buffers were not all followed: say what was assumed.
  if (!C.BuffersAssumption.empty())
    note(C.BuffersAssumedAt.isValid() ? C.BuffersAssumedAt
                                      : F.Object->getLocation(),
         "assuming the forward saves a buffer for backward: %0",
         NoteKind::Assumption)
        << C.BuffersAssumption;

  // The broadcast fix trades the crash for a change of behaviour: say so, and
  // name the fixes that keep buffers synchronised.
  const WrapperRule *Rule = C.Rule;
  std::string KeepInSync;
  if (Rule && !Rule->FusedForward.empty())
    KeepInSync = "fusing the forwards into one '" + Rule->FusedForward +
                 "' call (FixMode: fuse)";
  if (Rule && Rule->OncePerBackward.available() && !C.OncePerBackward &&
      !F.OncePerBackwardFails)
    KeepInSync += std::string(KeepInSync.empty() ? "" : " or ") +
                  "broadcasting once per backward ('" +
                  shortEnumerator(Rule->OncePerBackward.Value) + "')";
  std::string Behaviour =
      "each rank then keeps its own running statistics, no longer rank 0's "
      "(BatchNorm's running_mean and running_var)";

  std::string Option = Rule->Broadcast.nameAt(Judged.Version);
  std::string CannotBroadcast =
      OnceFirst ? "cannot broadcast buffers once per backward automatically: %0"
                : "cannot set '" + Option + "' to false automatically: %0";
  const fix::FixOutcome &Alternative = FuseFirst ? Broadcast : Fuse;
  const fix::FixOutcome &Primary = FuseFirst ? Fuse : Broadcast;
  auto Withheld = [](const fix::FixOutcome &Fix) {
    return Fix.ConstructionNotVisible ? NoteRole::ConstructionNotVisible
                                      : NoteRole::None;
  };
  if (!Primary.applies() && !Primary.Reason.empty())
    note(locationOf(F.Second),
         FuseFirst ? "cannot fuse the forwards: %0" : CannotBroadcast,
         NoteKind::NoFix, Withheld(Primary))
        << Primary.Reason;
  if (Alternative.applies()) {
    auto Note = note(locationOf(F.Second),
                     FuseFirst ? "or set '" + Option +
                                     "' to false, which changes behaviour: %0"
                               : "or fuse the forwards into one call",
                     NoteKind::Alternative);
    if (FuseFirst)
      Note << Behaviour;
    for (const FixItHint &Hint : Alternative.Hints)
      Note << Hint;
  } else if (!Alternative.Reason.empty()) {
    note(locationOf(F.Second),
         FuseFirst ? CannotBroadcast : "cannot fuse the forwards: %0",
         NoteKind::NoFix, Withheld(Alternative))
        << Alternative.Reason;
  }
  if (!FuseFirst && !OnceFirst && Broadcast.applies())
    note(locationOf(F.Second), "%0: %1%2", NoteKind::FixEffect)
        << broadcastFixNote(Option) << Behaviour
        << (KeepInSync.empty() ? "" : "; " + KeepInSync + " keeps buffers in sync");
  if (OnceFirst && Broadcast.applies())
    note(locationOf(F.Second),
         "%0: buffers are broadcast from rank 0 on the first forward after a "
         "backward, and the later forwards before the next backward reuse "
         "them ('%1(%2)' at the construction of '%3')",
         NoteKind::FixEffect)
        << OncePerBackwardFixNote << Rule->OncePerBackward.Setter
        << Rule->OncePerBackward.Value << Name;
  noteVersion(F, *Rule);
}

void MultipleForwardBeforeBackwardCheck::noteVersion(const Finding &F,
                                                     const WrapperRule &Rule) {
  // PyTorch's DDP preserves the version counters from 2.12.1: say when a
  // wrapper that is judged on such a version does not.
  static constexpr TorchVersion PyTorchPreserves{2, 12, 1};
  const std::optional<TorchVersion> &From = Rule.PreservesVersionCountersFrom;
  std::string Why;
  if (!From && !(Judged.Version < PyTorchPreserves))
    Why = "; '" + Rule.Type + "' does not put the buffers' version counters "
          "back after its broadcast, as PyTorch's DDP does from " +
          PyTorchPreserves.str() + " on (its rule in '" + Rule.SourceFile +
          "' has no 'preserves-version-counters')";
  note(locationOf(F.Second), "judged by %0%1", NoteKind::JudgedBy)
      << Judged.describe() << Why;
  if (From && Judged.Version < *From)
    note(locationOf(F.Second),
         "or build against LibTorch %0 or later: there '%1' puts the buffers' "
         "version counters back after its broadcast, as PyTorch's DDP does, "
         "and these forwards no longer fail",
         NoteKind::Alternative)
        << From->str() << Rule.Type;
}

} // namespace tidy
} // namespace ddpguard
