//===- WriteBeforeBackwardCheck.h - Shared part of the write checks -------===//
//
// The checks of a write to parameters that a forward saved for backward,
// before a backward through that forward's graph (docs/design.md, "The
// write event"): optimizer-step-before-backward and
// parameter-write-before-backward. Each collects the candidate functions,
// runs its kind of write through the analysis in Frontend/ and Model/, and
// reports; the notes they share (the forward, the backward, the version)
// are written here.
//
// Options (both checks):
//   RuleFiles     extra DDP wrapper rule files, separated by ';' (a write
//                 over `d.module()->parameters()` writes what forwards on
//                 the DDP object d saved)
//   TorchVersion  the LibTorch version to judge by; default: what
//                 <torch/version.h> defines, else 2.11.0
//
//===----------------------------------------------------------------------===//

#ifndef DDPGUARD_TIDY_WRITEBEFOREBACKWARDCHECK_H
#define DDPGUARD_TIDY_WRITEBEFOREBACKWARDCHECK_H

#include "Frontend/LibTorchVersion.h"
#include "Frontend/TranslationUnitAnalysis.h"
#include "FindingRecord.h"
#include <memory>

namespace ddpguard {
namespace tidy {

class WriteBeforeBackwardCheck : public RecordingCheck {
public:
  WriteBeforeBackwardCheck(llvm::StringRef Name,
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

protected:
  /// The findings of this check's kind of write.
  virtual std::vector<clangfe::WriteFinding>
  findings(clangfe::TranslationUnitAnalysis &Analysis) = 0;
  virtual void report(const clangfe::WriteFinding &F) = 0;

  /// The notes at the forward that saved the parameters and at the backward
  /// that fails.
  void noteForwardAndBackward(const clangfe::WriteFinding &F);
  /// The note at the backward that fails (in the next iteration of a loop).
  void noteBackward(const clangfe::WriteFinding &F);
  /// The note naming the LibTorch the finding was judged by.
  void noteJudgedBy(clang::SourceLocation Loc);
  unsigned lineOf(clang::SourceLocation Loc) const;

  clang::ASTContext *Context = nullptr;
  std::unique_ptr<clangfe::TranslationUnitAnalysis> Analysis;

private:
  std::string RuleFiles;
  std::string TorchVersionOption;
  std::optional<TorchVersion> VersionOverride;
  RuleSet Rules;
  clang::Preprocessor *PP = nullptr;
  clangfe::JudgedVersion Judged;
};

} // namespace tidy
} // namespace ddpguard

#endif
