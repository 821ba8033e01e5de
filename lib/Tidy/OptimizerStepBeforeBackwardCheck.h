//===- OptimizerStepBeforeBackwardCheck.h - clang-tidy adapter ------------===//
//
// optimizer-step-before-backward: an optimizer step that writes, in place,
// parameters that a forward saved for backward, before a backward through
// that forward's graph (a GAN's optD.step() before the generator's
// backward through D(fake)). The check only collects candidate functions
// and reports; the analysis lives in Frontend/ and Model/.
//
// Options:
//   RuleFiles     extra DDP wrapper rule files, separated by ';' (a step
//                 over `d.module()->parameters()` writes what forwards on
//                 the DDP object d saved)
//   TorchVersion  the LibTorch version to judge by; default: what
//                 <torch/version.h> defines, else 2.11.0
//
//===----------------------------------------------------------------------===//

#ifndef DDPGUARD_TIDY_OPTIMIZERSTEPBEFOREBACKWARDCHECK_H
#define DDPGUARD_TIDY_OPTIMIZERSTEPBEFOREBACKWARDCHECK_H

#include "Frontend/LibTorchVersion.h"
#include "Frontend/TranslationUnitAnalysis.h"
#include "clang-tidy/ClangTidyCheck.h"
#include <memory>

namespace ddpguard {
namespace tidy {

class OptimizerStepBeforeBackwardCheck : public clang::tidy::ClangTidyCheck {
public:
  OptimizerStepBeforeBackwardCheck(llvm::StringRef Name,
                                   clang::tidy::ClangTidyContext *Context);
  void storeOptions(clang::tidy::ClangTidyOptions::OptionMap &Opts) override;
  bool isLanguageVersionSupported(
      const clang::LangOptions &LangOpts) const override {
    return LangOpts.CPlusPlus17;
  }
  void registerPPCallbacks(const clang::SourceManager &SM,
                           clang::Preprocessor *PP,
                           clang::Preprocessor *ModuleExpanderPP) override {
    this->PP = PP;
  }
  void registerMatchers(clang::ast_matchers::MatchFinder *Finder) override;
  void check(const clang::ast_matchers::MatchFinder::MatchResult &Result) override;
  void onEndOfTranslationUnit() override;

private:
  void report(const clangfe::StepFinding &F);

  std::string RuleFiles;
  std::string TorchVersionOption;
  std::optional<TorchVersion> VersionOverride;
  RuleSet Rules;
  clang::Preprocessor *PP = nullptr;
  clangfe::JudgedVersion Judged;
  std::unique_ptr<clangfe::TranslationUnitAnalysis> Analysis;
  clang::ASTContext *Context = nullptr;
};

} // namespace tidy
} // namespace ddpguard

#endif
