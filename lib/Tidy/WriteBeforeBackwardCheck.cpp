//===- WriteBeforeBackwardCheck.cpp ---------------------------------------===//

#include "WriteBeforeBackwardCheck.h"
#include "clang/AST/ASTContext.h"
#include "clang/ASTMatchers/ASTMatchFinder.h"

using namespace clang;
using namespace clang::ast_matchers;
using namespace ddpguard::clangfe;

namespace ddpguard {
namespace tidy {

WriteBeforeBackwardCheck::WriteBeforeBackwardCheck(
    StringRef Name, clang::tidy::ClangTidyContext *Context)
    : RecordingCheck(Name, Context), RuleFiles(Options.get("RuleFiles", "")),
      TorchVersionOption(Options.get("TorchVersion", "")),
      Rules(RuleSet::builtin()) {
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
}

void WriteBeforeBackwardCheck::storeOptions(
    clang::tidy::ClangTidyOptions::OptionMap &Opts) {
  Options.store(Opts, "RuleFiles", RuleFiles);
  Options.store(Opts, "TorchVersion", TorchVersionOption);
}

void WriteBeforeBackwardCheck::registerMatchers(MatchFinder *Finder) {
  // As the DDP check: the analysis decides lazily which candidates write
  // and reach a backward.
  Finder->addMatcher(functionDecl(isDefinition(),
                                  unless(isExpansionInSystemHeader()),
                                  unless(isImplicit()))
                         .bind("function"),
                     this);
}

void WriteBeforeBackwardCheck::check(const MatchFinder::MatchResult &Result) {
  const auto *Function = Result.Nodes.getNodeAs<FunctionDecl>("function");
  if (!Analysis) {
    Context = Result.Context;
    recordWith(Context->getSourceManager());
    Judged = PP ? judgeVersion(*PP, VersionOverride) : JudgedVersion();
    // The buffers play no part in a write's finding: assume none are saved.
    Analysis = std::make_unique<TranslationUnitAnalysis>(
        *Result.Context, Rules, /*AssumeModulesHaveBuffers=*/false,
        Judged.Version);
  }
  if (Function->hasBody() && !Function->isDependentContext())
    Analysis->addCandidate(Function);
}

void WriteBeforeBackwardCheck::onEndOfTranslationUnit() {
  if (!Analysis)
    return;
  for (const WriteFinding &F : findings(*Analysis))
    report(F);
  Analysis.reset();
}

unsigned WriteBeforeBackwardCheck::lineOf(SourceLocation Loc) const {
  return Context->getSourceManager().getPresumedLineNumber(Loc);
}

void WriteBeforeBackwardCheck::noteForwardAndBackward(const WriteFinding &F) {
  std::string Module = F.Module->getNameAsString();
  bool OnInput = Analysis->modules().savingOf(F.Module) ==
                 ParameterSaving::IfInputsRequireGrad;
  note(F.Forward.Call->getBeginLoc(),
       "forward on '%0' is here; it saved the parameters of '%0' for "
       "backward%select{| because its input may require grad}1")
      << Module << OnInput;
  noteBackward(F);
}

void WriteBeforeBackwardCheck::noteBackward(const WriteFinding &F) {
  if (F.Loop)
    note(F.Backward.Call->getExprLoc(),
         "the backward that fails is here, in the next iteration of the loop "
         "at line %0")
        << lineOf(F.Loop->getBeginLoc());
  else
    note(F.Backward.Call->getExprLoc(), "the backward that fails is here");
}

void WriteBeforeBackwardCheck::noteJudgedBy(SourceLocation Loc) {
  note(Loc, "judged by %0", NoteKind::JudgedBy) << Judged.describe();
}

} // namespace tidy
} // namespace ddpguard
