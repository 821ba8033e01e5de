//===- MultipleForwardBeforeBackwardCheck.h - clang-tidy adapter ----------===//
//
// ddp-multiple-forward-before-backward: a forward on a DDP-wrapped module
// before the backward of an earlier forward on it, while DDP broadcasts
// buffers. The check only collects candidate functions and reports; the
// analysis lives in Frontend/ and Model/.
//
// Options:
//   RuleFiles                 extra rule files, separated by ';'
//   FixMode                   'broadcast' (default), 'fuse' or
//                             'once-per-backward': which fix the warning
//                             carries; fuse (or, with 'fuse', broadcast) is a
//                             note's fix
//   AssumeModulesHaveBuffers  assume the wrapped module's forward saves a
//                             buffer for backward, even where it provably
//                             saves none (default false)
//   TorchVersion              the LibTorch version to judge by (e.g.
//                             2.12.1); default: what <torch/version.h>
//                             defines, else 2.11.0
//
//===----------------------------------------------------------------------===//

#ifndef DDPGUARD_TIDY_MULTIPLEFORWARDBEFOREBACKWARDCHECK_H
#define DDPGUARD_TIDY_MULTIPLEFORWARDBEFOREBACKWARDCHECK_H

#include "Fix/Fixes.h"
#include "Frontend/LibTorchVersion.h"
#include "Frontend/TranslationUnitAnalysis.h"
#include "FindingRecord.h"
#include "llvm/ADT/DenseSet.h"
#include <memory>

namespace ddpguard {
namespace tidy {

class MultipleForwardBeforeBackwardCheck : public RecordingCheck {
public:
  /// The note that says what the broadcast fix on the warning changes, for
  /// the setting named Option ('broadcast_buffers',
  /// 'forward_sync_buffers'); the Python findings say it in the same words.
  static std::string broadcastFixNote(llvm::StringRef Option) {
    return ("the fix sets '" + Option + "' to false, which changes behaviour")
        .str();
  }
  /// How the note that comes with a once-per-backward fix on the warning
  /// begins.
  static constexpr llvm::StringLiteral OncePerBackwardFixNote =
      "the fix broadcasts buffers once per backward, which keeps them "
      "synchronised";
  /// What the note says after the object's name when a DDP parameter's
  /// callers were not all followed (NoteRole::CallersNotFollowed); the CLI
  /// says it again of the other files.
  static constexpr llvm::StringLiteral NotFollowedNote =
      "is not followed to its construction among the callers";

  MultipleForwardBeforeBackwardCheck(llvm::StringRef Name,
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
  void report(const clangfe::Finding &F);
  /// Where the object is constructed and how that sets broadcast_buffers: at
  /// its own construction, or for a parameter at its callers'.
  void noteConstruction(const clangfe::Finding &F,
                        const clangfe::Construction &C);
  /// A parameter's notes: each caller's construction and how it gets there.
  void noteCallerConstructions(const clangfe::Construction &C,
                               llvm::StringRef Option);
  /// Which LibTorch the finding is judged by and, where a newer one would
  /// not fail, the upgrade.
  void noteVersion(const clangfe::Finding &F, const WrapperRule &Rule);
  /// Why the once-per-backward policy would not remove the finding.
  std::string oncePerBackwardFailure(const clangfe::Finding &F) const;

  std::string RuleFiles;
  std::string FixMode;
  bool AssumeModulesHaveBuffers;
  std::string TorchVersionOption;
  std::optional<TorchVersion> VersionOverride;
  RuleSet Rules;
  clang::Preprocessor *PP = nullptr;
  clangfe::JudgedVersion Judged;
  std::unique_ptr<clangfe::TranslationUnitAnalysis> Analysis;
  std::unique_ptr<fix::FuseFixer> Fuser;
  clang::ASTContext *Context = nullptr;
  /// Constructions that already carry a fix.
  llvm::DenseSet<const clangfe::Construction *> ConstructionFixed;
  llvm::DenseSet<const clang::Stmt *> FuseFixed;
};

} // namespace tidy
} // namespace ddpguard

#endif
