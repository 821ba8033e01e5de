//===- OptimizerStepBeforeBackwardCheck.cpp -------------------------------===//

#include "OptimizerStepBeforeBackwardCheck.h"
#include "clang/AST/ASTContext.h"
#include "clang/ASTMatchers/ASTMatchFinder.h"

using namespace clang;
using namespace clang::ast_matchers;
using namespace ddpguard::clangfe;

namespace ddpguard {
namespace tidy {

OptimizerStepBeforeBackwardCheck::OptimizerStepBeforeBackwardCheck(
    StringRef Name, clang::tidy::ClangTidyContext *Context)
    : ClangTidyCheck(Name, Context), RuleFiles(Options.get("RuleFiles", "")),
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

void OptimizerStepBeforeBackwardCheck::storeOptions(
    clang::tidy::ClangTidyOptions::OptionMap &Opts) {
  Options.store(Opts, "RuleFiles", RuleFiles);
  Options.store(Opts, "TorchVersion", TorchVersionOption);
}

void OptimizerStepBeforeBackwardCheck::registerMatchers(MatchFinder *Finder) {
  // As the DDP check: the analysis decides lazily which candidates call a
  // step and reach a backward.
  Finder->addMatcher(functionDecl(isDefinition(),
                                  unless(isExpansionInSystemHeader()),
                                  unless(isImplicit()))
                         .bind("function"),
                     this);
}

void OptimizerStepBeforeBackwardCheck::check(
    const MatchFinder::MatchResult &Result) {
  const auto *Function = Result.Nodes.getNodeAs<FunctionDecl>("function");
  if (!Analysis) {
    Context = Result.Context;
    Judged = PP ? judgeVersion(*PP, VersionOverride) : JudgedVersion();
    // The buffers play no part in a step's finding: assume none are saved.
    Analysis = std::make_unique<TranslationUnitAnalysis>(
        *Result.Context, Rules, /*AssumeModulesHaveBuffers=*/false,
        Judged.Version);
  }
  if (Function->hasBody() && !Function->isDependentContext())
    Analysis->addCandidate(Function);
}

void OptimizerStepBeforeBackwardCheck::onEndOfTranslationUnit() {
  if (!Analysis)
    return;
  for (const StepFinding &F : Analysis->runSteps())
    report(F);
  Analysis.reset();
}

void OptimizerStepBeforeBackwardCheck::report(const StepFinding &F) {
  const SourceManager &SM = Context->getSourceManager();
  std::string Module = F.Module->getNameAsString();
  std::string Optimizer = F.Opt->Decl->getNameAsString();
  SourceLocation Step = F.Step.Call->getBeginLoc();
  unsigned BackwardLine =
      SM.getPresumedLineNumber(F.Backward.Call->getExprLoc());
  diag(Step,
       "step of '%0' writes the parameters of '%1' in place, which the "
       "forward at line %2 saved for backward; the backward at line %3 "
       "through that forward will fail")
      << Optimizer << Module
      << SM.getPresumedLineNumber(F.Forward.Call->getBeginLoc())
      << BackwardLine;
  bool OnInput = Analysis->modules().savingOf(F.Module) ==
                 ParameterSaving::IfInputsRequireGrad;
  diag(F.Forward.Call->getBeginLoc(),
       "forward on '%0' is here; it saved the parameters of '%0' for "
       "backward%select{| because its input may require grad}1",
       DiagnosticIDs::Note)
      << Module << OnInput;
  if (F.Loop)
    diag(F.Backward.Call->getExprLoc(),
         "the backward that fails is here, in the next iteration of the loop "
         "at line %0",
         DiagnosticIDs::Note)
        << SM.getPresumedLineNumber(F.Loop->getBeginLoc());
  else
    diag(F.Backward.Call->getExprLoc(), "the backward that fails is here",
         DiagnosticIDs::Note);
  if (F.Opt->Assumed)
    diag(Step,
         "assuming that a step of '%0' bumps the version counters of the "
         "parameters it updates: the type is not among the measured "
         "optimizers (Adam, AdamW, RMSprop, Adagrad and LBFGS do; SGD does "
         "not)",
         DiagnosticIDs::Note)
        << F.Opt->Type;
  diag(Step,
       "no fix is offered: moving the step after the backward at line %0 "
       "would make it use that backward's gradients too, and recomputing the "
       "forward after the step would change what the later loss sees; both "
       "change what training computes",
       DiagnosticIDs::Note)
      << BackwardLine;
  diag(Step, "judged by %0", DiagnosticIDs::Note) << Judged.describe();
}

} // namespace tidy
} // namespace ddpguard
