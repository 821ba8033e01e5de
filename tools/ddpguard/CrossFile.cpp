//===- CrossFile.cpp ------------------------------------------------------===//

#include "CrossFile.h"
#include "Fix/Fixes.h"
#include "FixWriter.h"
#include "Frontend/Callers.h"
#include "Frontend/TranslationUnitAnalysis.h"
#include "Report.h"
#include "Tidy/CheckNames.h"
#include "Tidy/MultipleForwardBeforeBackwardCheck.h"
#include "clang-tidy/ClangTidyCheck.h"
#include "clang-tidy/ClangTidyModule.h"
#include "clang-tidy/ClangTidyModuleRegistry.h"
#include "clang/ASTMatchers/ASTMatchFinder.h"
#include "clang/Index/USRGeneration.h"
#include "clang/Lex/Lexer.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/YAMLParser.h"

using namespace clang;
using namespace clang::ast_matchers;
using clang::tidy::ClangTidyError;
using clang::tooling::DiagnosticMessage;

namespace ddpguard {
namespace crossfile {

namespace {

/// Cross-file facts are about DDP objects' constructions: that check's.
constexpr StringRef TidyCheckName = checks::MultipleForwardBeforeBackward;

/// The facts of the translation unit this thread is parsing.
thread_local Facts *CurrentFacts = nullptr;

/// Indexes one translation unit's facts for the CLI; reports nothing.
class IndexCheck : public clang::tidy::ClangTidyCheck {
public:
  IndexCheck(StringRef Name, clang::tidy::ClangTidyContext *Context)
      : ClangTidyCheck(Name, Context), Rules(RuleSet::builtin()) {
    // The real check's options; it reports their errors.
    const auto &Options = Context->getOptions().CheckOptions;
    auto Option = [&](StringRef Local, StringRef Default) -> std::string {
      auto It = Options.find((Twine(TidyCheckName) + "." + Local).str());
      return It == Options.end() ? Default.str() : It->getValue().Value;
    };
    llvm::SmallVector<StringRef, 4> Files;
    std::string RuleFiles = Option("RuleFiles", "");
    StringRef(RuleFiles).split(Files, ';', -1, /*KeepEmpty=*/false);
    for (StringRef File : Files)
      llvm::consumeError(Rules.addFile(File.trim()));
    AssumeModulesHaveBuffers =
        llvm::yaml::parseBool(Option("AssumeModulesHaveBuffers", "false"))
            .value_or(false);
    FixMode = Option("FixMode", "broadcast");
    Version = TorchVersion::parse(Option("TorchVersion", ""));
  }
  void registerPPCallbacks(const SourceManager &, Preprocessor *PP,
                           Preprocessor *) override {
    this->PP = PP;
  }
  bool isLanguageVersionSupported(const LangOptions &LangOpts) const override {
    return LangOpts.CPlusPlus17;
  }
  void registerMatchers(MatchFinder *Finder) override {
    Finder->addMatcher(functionDecl(isDefinition(),
                                    unless(isExpansionInSystemHeader()),
                                    unless(isImplicit()))
                           .bind("function"),
                       this);
  }
  void check(const MatchFinder::MatchResult &Result) override {
    AST = Result.Context;
    const auto *Function = Result.Nodes.getNodeAs<FunctionDecl>("function");
    if (Function->hasBody() && !Function->isDependentContext())
      Functions.push_back(Function);
  }
  void onEndOfTranslationUnit() override {
    if (CurrentFacts && AST)
      index(*AST, *CurrentFacts);
    Functions.clear();
    AST = nullptr;
  }

private:
  void index(ASTContext &Context, Facts &Into);

  RuleSet Rules;
  bool AssumeModulesHaveBuffers = false;
  std::string FixMode;
  std::optional<TorchVersion> Version;
  Preprocessor *PP = nullptr;
  ASTContext *AST = nullptr;
  std::vector<const FunctionDecl *> Functions;
};

/// Facts read from one AST.
class Indexer {
public:
  Indexer(ASTContext &Context, TorchVersion Version)
      : Context(Context), Version(Version) {}

  Place place(SourceLocation Loc) const {
    const SourceManager &SM = Context.getSourceManager();
    Loc = SM.getFileLoc(Loc);
    Place P;
    if (OptionalFileEntryRef Entry = SM.getFileEntryRefForID(SM.getFileID(Loc)))
      P.File = resolvedPath(Entry->getName());
    P.Offset = SM.getFileOffset(Loc);
    return P;
  }

  Edit edits(const fix::FixOutcome &Outcome) const {
    Edit E;
    E.Reason = Outcome.Reason;
    for (const FixItHint &Hint : Outcome.Hints) {
      tooling::Replacement R(Context.getSourceManager(), Hint.RemoveRange,
                             Hint.CodeToInsert, Context.getLangOpts());
      std::string File = place(Hint.RemoveRange.getBegin()).File;
      llvm::consumeError(E.Replacements[File].add(tooling::Replacement(
          File, R.getOffset(), R.getLength(), R.getReplacementText())));
    }
    return E;
  }

  static std::vector<std::string>
  chain(llvm::ArrayRef<const CallExpr *> Calls) {
    std::vector<std::string> Names;
    for (const CallExpr *Call : Calls)
      Names.push_back(clangfe::describeCallee(Call->getDirectCallee()));
    return Names;
  }

  Construction construction(const clangfe::CallerSource &Source) const {
    const clangfe::Construction &From = *Source.From;
    Construction C;
    C.At = place(From.Expr->getBeginLoc());
    C.Object = isa<ParmVarDecl>(From.Object)
                   ? "the temporary"
                   : "'" + From.Object->getNameAsString() + "'";
    C.Chain = chain(Source.Calls);
    C.Broadcasts = From.broadcasts();
    C.OncePerBackward = From.OncePerBackward;
    C.HasBuffers = From.HasBuffers;
    C.Setting = clangfe::describeBroadcast(From);
    C.BroadcastFix = edits(fix::makeBroadcastFix(From, Context, Version));
    C.OncePerBackwardFix = edits(fix::makeOncePerBackwardFix(From, Context));
    const OncePerBackwardSetting &Policy = From.Rule->OncePerBackward;
    if (Policy.available())
      C.OncePerBackwardSetter = Policy.Setter + "(" + Policy.Value + ")";
    return C;
  }

  static std::string usr(const FunctionDecl &Function) {
    llvm::SmallString<128> Usr;
    if (index::generateUSRForDecl(&Function, Usr))
      return "";
    return std::string(Usr);
  }

  Resolution resolution(const clangfe::CallerSources &Found,
                        llvm::ArrayRef<clangfe::OpenEnd> Open) const {
    Resolution R;
    if (!Found.Complete) {
      R.Failure = NotFollowed{Found.WhyNot, place(Found.WhyNotLoc)};
      return R;
    }
    for (const clangfe::CallerSource &Source : Found.Sources)
      R.Sources.push_back(construction(Source));
    for (const clangfe::OpenEnd &End : Open) {
      const auto *Function = cast<FunctionDecl>(End.Root->getDeclContext());
      OpenEnd O;
      O.Usr = usr(*Function);
      O.Index = End.Root->getFunctionScopeIndex();
      O.Function = clangfe::describeCallee(Function);
      if (Function->getIdentifier())
        O.Identifier = Function->getName().str();
      O.Chain = chain(End.Calls);
      R.Open.push_back(std::move(O));
    }
    return R;
  }

private:
  ASTContext &Context;
  TorchVersion Version;
};

void IndexCheck::index(ASTContext &Context, Facts &Into) {
  // Judged by the version the real check judges by.
  TorchVersion Judged =
      PP ? clangfe::judgeVersion(*PP, Version).Version : OldestSupportedTorch;
  clangfe::TranslationUnitAnalysis Analysis(Context, Rules,
                                            AssumeModulesHaveBuffers, Judged);
  clangfe::DDPObjects &Objects = Analysis.objects();
  clangfe::CallerIndex Callers(Context, Objects);
  Indexer Index(Context, Judged);

  // Calls that pass a DDP object to a function defined in another file.
  Callers.forEachCallee([&](const FunctionDecl &Callee,
                            const clangfe::CallerIndex::Uses &Uses) {
    const auto *Method = dyn_cast<CXXMethodDecl>(&Callee);
    if (Callee.isDefined() || clangfe::isLibraryDecl(&Callee) ||
        !Callee.isExternallyVisible() ||
        (Method && (Method->isVirtual() || Method->getParent()->isLambda())))
      return;
    for (const ParmVarDecl *Param : Callee.parameters()) {
      if (!Objects.ruleFor(Param->getType()))
        continue;
      CallEntry Entry;
      Entry.Usr = Indexer::usr(Callee);
      Entry.Index = Param->getFunctionScopeIndex();
      if (Entry.Usr.empty())
        continue;
      if (Uses.Escape) {
        Entry.Passed.Failure = NotFollowed{
            clangfe::describeCallee(&Callee) +
                " is used here other than by a direct call, so it may be "
                "called where it is not seen",
            Index.place(Uses.Escape->getExprLoc())};
        Into.Calls.push_back(std::move(Entry));
        continue;
      }
      for (const CallExpr *Call : Uses.Calls) {
        llvm::SmallVector<clangfe::OpenEnd, 1> Open;
        clangfe::CallerSources Found =
            Callers.resolveArgument(*Call, *Param, Open);
        CallEntry One = Entry;
        One.Passed = Index.resolution(Found, Open);
        Into.Calls.push_back(std::move(One));
      }
    }
  });

  // Parameters whose objects may come from other files, and their findings.
  struct Candidate {
    clangfe::CallerSources Found;
    llvm::SmallVector<clangfe::OpenEnd, 1> Open;
  };
  llvm::DenseMap<const ValueDecl *, Candidate> Candidates;
  for (const FunctionDecl *Function : Functions) {
    bool Added = false;
    for (const ParmVarDecl *Param : Function->parameters()) {
      if (!Objects.ruleFor(Param->getType()))
        continue;
      Candidate C;
      C.Found = Callers.resolveAcrossFiles(*Param, C.Open);
      if (!C.Found.Complete || C.Open.empty())
        continue;
      Candidates[Param] = std::move(C);
      if (!Added)
        Analysis.addCandidate(Function);
      Added = true;
    }
  }
  if (Candidates.empty())
    return;
  for (const clangfe::Finding &F : Analysis.run()) {
    auto It = Candidates.find(F.Object);
    if (It == Candidates.end())
      continue;
    const clangfe::Site &Second = F.Second;
    Need N;
    N.Warning =
        Index.place(Second.AtInner ? Second.Inner : Second.Call->getBeginLoc());
    N.Object = F.Object->getNameAsString();
    N.Parameter = Index.place(F.Object->getLocation());
    N.WhyNot = Index.place(Objects.construction(F.Object).Callers.WhyNotLoc);
    N.FixMode = FixMode;
    N.OncePerBackwardFails = F.OncePerBackwardFails.has_value();
    N.Callers = Index.resolution(It->second.Found, It->second.Open);
    Into.Needs.push_back(std::move(N));
  }
}

class CrossFileModule : public clang::tidy::ClangTidyModule {
public:
  void addCheckFactories(
      clang::tidy::ClangTidyCheckFactories &CheckFactories) override {
    CheckFactories.registerCheck<IndexCheck>(IndexCheckName);
  }
};

static clang::tidy::ClangTidyModuleRegistry::Add<CrossFileModule>
    Module("ddpguard-cli-cross-file", "The ddpguard CLI's cross-file index.");

DiagnosticMessage note(std::string Message, const Place &At) {
  DiagnosticMessage Note;
  Note.Message = std::move(Message);
  Note.FilePath = At.File;
  Note.FileOffset = At.Offset;
  return Note;
}

/// "is passed to 'step'", or "reaches 'step' through 'run' → 'step'".
std::string describePath(const std::vector<std::string> &Chain) {
  if (Chain.size() == 1)
    return "is passed to " + Chain.back();
  return "reaches " + Chain.back() + " through " +
         llvm::join(Chain, " \u2192 ");
}

} // namespace

FactsScope::FactsScope(Facts &Into) { CurrentFacts = &Into; }
FactsScope::~FactsScope() { CurrentFacts = nullptr; }

CrossFileResolver::CrossFileResolver(const std::vector<const Facts *> &All,
                                     std::vector<std::string> Unchecked)
    : Unchecked(std::move(Unchecked)) {
  for (const Facts *F : All)
    for (const CallEntry &Entry : F->Calls)
      Calls.insert({{Entry.Usr, Entry.Index}, &Entry.Passed});
}

void CrossFileResolver::join(const Resolution &R,
                             const std::vector<std::string> &Suffix,
                             Joined &Into,
                             std::set<std::pair<std::string, unsigned>> &Seen) {
  for (const Construction &Source : R.Sources) {
    if (llvm::any_of(Into.Sources, [&](const Construction &Known) {
          return Known.At == Source.At;
        }))
      continue;
    Construction Joined = Source;
    llvm::append_range(Joined.Chain, Suffix);
    Into.Sources.push_back(std::move(Joined));
  }
  if (R.Failure)
    Into.Failures.push_back(*R.Failure);
  for (const OpenEnd &End : R.Open) {
    if (!End.Identifier.empty())
      Into.Identifiers.insert(End.Identifier);
    // A function reached twice (a recursion across files, or two paths)
    // has its callers joined once.
    if (!Seen.insert({End.Usr, End.Index}).second)
      continue;
    std::vector<std::string> Chain = End.Chain;
    llvm::append_range(Chain, Suffix);
    auto [Begin, Finish] = Calls.equal_range({End.Usr, End.Index});
    if (Begin == Finish)
      Into.Uncalled.push_back(End);
    for (auto It = Begin; It != Finish; ++It)
      join(*It->second, Chain, Into, Seen);
  }
}

std::vector<std::pair<std::string, Place>>
CrossFileResolver::uncheckedCalls(const std::set<std::string> &Identifiers) {
  if (!UncheckedIndex) {
    // Every identifier followed by '(' in the unchecked files, once: a raw
    // lexer pass, no preprocessing, so a call through a macro is missed.
    UncheckedIndex.emplace();
    LangOptions Options;
    Options.CPlusPlus = Options.CPlusPlus17 = true;
    for (const std::string &File : Unchecked) {
      auto Buffer = llvm::MemoryBuffer::getFile(File);
      if (!Buffer)
        continue;
      StringRef Text = (*Buffer)->getBuffer();
      Lexer Lex(SourceLocation(), Options, Text.begin(), Text.begin(),
                Text.end());
      Token Tok, Previous;
      std::set<std::string> Named;
      while (!Lex.LexFromRawLexer(Tok) || Tok.isNot(tok::eof)) {
        if (Tok.is(tok::l_paren) && Previous.is(tok::raw_identifier)) {
          std::string Name = Previous.getRawIdentifier().str();
          if (Named.insert(Name).second)
            (*UncheckedIndex)[Name].push_back(
                {resolvedPath(File), Previous.getLocation().getRawEncoding()});
        }
        Previous = Tok;
      }
    }
  }
  std::vector<std::pair<std::string, Place>> Found;
  for (const std::string &Identifier : Identifiers) {
    auto It = UncheckedIndex->find(Identifier);
    if (It != UncheckedIndex->end())
      for (const Place &At : It->second)
        Found.push_back({Identifier, At});
  }
  return Found;
}

void CrossFileResolver::resolve(const Facts &Own,
                                std::vector<Finding> &Findings) {
  for (const Need &N : Own.Needs) {
    auto F = llvm::find_if(Findings, [&](const Finding &E) {
      return E.DiagnosticName == TidyCheckName &&
             E.Message.FileOffset == N.Warning.Offset &&
             resolvedPath(E.Message.FilePath) == N.Warning.File;
    });
    if (F == Findings.end())
      continue;
    Joined J;
    std::set<std::pair<std::string, unsigned>> Seen;
    join(N.Callers, {}, J, Seen);
    if (!rewrite(N, J, *F))
      Findings.erase(F);
  }
}

bool CrossFileResolver::rewrite(const Need &N, Joined &J, Finding &F) {
  std::string Quoted = "'" + N.Object + "'";
  std::vector<std::pair<std::string, Place>> Unseen =
      uncheckedCalls(J.Identifiers);
  std::vector<DiagnosticMessage> Notes;
  for (const Construction &Source : J.Sources)
    Notes.push_back(note(Source.Object + " is constructed here and " +
                             describePath(Source.Chain) + "; " + Source.Setting,
                         Source.At));
  bool Complete = J.Failures.empty() && J.Uncalled.empty() && Unseen.empty() &&
                  !J.Sources.empty();
  if (!Complete) {
    // The check's notes stand; add what the other files tell.
    for (const NotFollowed &Failure : J.Failures)
      Notes.push_back(note(Quoted + " " + tidy::MultipleForwardBeforeBackwardCheck::NotFollowedNote.str() +
                               " in the other files: " + Failure.Why,
                           Failure.At));
    for (const auto &[Identifier, At] : Unseen)
      Notes.push_back(note("'" + Identifier +
                               "' may be called here, in a file this run did "
                               "not check; pass it too to follow " +
                               Quoted + " to its construction and fix it there",
                           At));
    for (DiagnosticMessage &Note : Notes)
      F.addNote(std::move(Note), NoteKind::Place);
    return true;
  }

  // Every construction is known: harmless ones end the finding, as within
  // one translation unit.
  auto All = [&](auto Pred) { return llvm::all_of(J.Sources, Pred); };
  if (All([](const Construction &C) { return !C.HasBuffers; }) ||
      All([](const Construction &C) { return !C.Broadcasts; }) ||
      (!N.OncePerBackwardFails && All([](const Construction &C) {
        return !C.Broadcasts || C.OncePerBackward;
      })))
    return false;

  // The check's notes about the unseen construction give way to the
  // constructions: the parameter's, why its callers were not followed, and
  // that no fix could be made.
  size_t Insert = F.Notes.size();
  for (size_t I = F.Notes.size(); I-- > 0;) {
    const DiagnosticMessage &Note = F.Notes[I];
    Place At{resolvedPath(Note.FilePath), Note.FileOffset};
    NoteRole Role = F.roleOf(I);
    if (At == N.Parameter ||
        (At == N.WhyNot && Role == NoteRole::CallersNotFollowed) ||
        (At == N.Warning && Role == NoteRole::ConstructionNotVisible)) {
      F.eraseNote(I);
      Insert = I;
    }
  }
  std::vector<std::string> Where;
  for (const Construction &Source : J.Sources)
    Where.push_back(
        workingPath(Source.At.File) + ":" +
        std::to_string(Lines.position(Source.At.File, Source.At.Offset).first));
  Notes.insert(Notes.begin(),
               note(Quoted +
                        " is constructed in another file of this run, "
                        "at " +
                        llvm::join(Where, " and "),
                    N.Parameter));

  bool Once = N.FixMode == "once-per-backward";
  bool Fuse = N.FixMode == "fuse";
  auto Needs = [&](const Construction &C) {
    return C.Broadcasts && !(Once && C.OncePerBackward);
  };
  const char *Cannot =
      Once ? "cannot broadcast buffers once per backward automatically: "
           : "cannot set 'broadcast_buffers' to false automatically: ";
  std::string Behaviour =
      "each rank then keeps its own running statistics, no longer rank 0's "
      "(BatchNorm's running_mean and running_var)";
  std::vector<std::pair<DiagnosticMessage, NoteKind>> FixNotes;
  DiagnosticMessage *FixOn = &F.Message;
  llvm::StringMap<tooling::Replacements> Edits;
  // With the once-per-backward fix withheld, the check's note says why.
  bool Withheld = Once && N.OncePerBackwardFails;
  std::vector<const Construction *> ToFix;
  for (const Construction &Source : J.Sources) {
    if (Withheld || !Needs(Source))
      continue;
    const Edit &Fix = Once ? Source.OncePerBackwardFix : Source.BroadcastFix;
    if (!Fix.Reason.empty()) {
      FixNotes.push_back({note(Cannot + Fix.Reason + " (it reaches " +
                                   Source.Chain.back() + " through " +
                                   llvm::join(Source.Chain, " \u2192 ") + ")",
                               N.Warning),
                          NoteKind::NoFix});
      ToFix.clear();
      break;
    }
    ToFix.push_back(&Source);
  }
  for (const Construction *Source : ToFix) {
    // Each construction is edited once, whatever number of warnings.
    if (!Fuse && !Fixed.insert(Source->At).second)
      continue;
    const Edit &Fix = Once ? Source->OncePerBackwardFix : Source->BroadcastFix;
    for (const auto &[File, Replacements] : Fix.Replacements)
      for (const tooling::Replacement &R : Replacements)
        llvm::consumeError(Edits[File].add(R));
  }
  if (!Edits.empty()) {
    if (Fuse) {
      FixNotes.push_back({note("or set 'broadcast_buffers' to false, which "
                               "changes behaviour: " +
                                   Behaviour,
                               N.Warning),
                          NoteKind::Alternative});
      FixOn = &FixNotes.back().first;
    } else if (Once) {
      FixNotes.push_back(
          {note((tidy::MultipleForwardBeforeBackwardCheck::
                     OncePerBackwardFixNote +
                 ": buffers are broadcast from rank 0 on the first forward "
                 "after a backward, and the later forwards before the next "
                 "backward reuse them ('" +
                 J.Sources.front().OncePerBackwardSetter +
                 "' at the constructions in the other files)")
                    .str(),
                N.Warning),
           NoteKind::FixEffect});
      F.Applicability = FixApplicability::Safe;
      F.FixTitle = "Broadcast buffers once per backward";
    } else {
      FixNotes.push_back(
          {note(tidy::MultipleForwardBeforeBackwardCheck::broadcastFixNote(
                    "broadcast_buffers") +
                    ": " + Behaviour,
                N.Warning),
           NoteKind::FixEffect});
      F.Applicability = FixApplicability::Unsafe;
      F.FixTitle = "Set 'broadcast_buffers' to false at the construction";
    }
    for (auto &[File, Replacements] : Edits)
      FixOn->Fix[File] = std::move(Replacements);
  }
  for (size_t I = 0; I < Notes.size(); ++I)
    F.insertNote(Insert + I, std::move(Notes[I]), NoteKind::Place);
  for (auto &[Note, Kind] : FixNotes)
    F.addNote(std::move(Note), Kind);
  return true;
}

} // namespace crossfile
} // namespace ddpguard
