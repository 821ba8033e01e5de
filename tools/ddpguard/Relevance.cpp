//===- Relevance.cpp ------------------------------------------------------===//

#include "Relevance.h"
#include "Rules/RuleSet.h"
#include "clang/Basic/Diagnostic.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Frontend/CompilerInstance.h"
#include "clang/Frontend/FrontendActions.h"
#include "clang/Lex/Preprocessor.h"
#include "clang/Lex/PreprocessorOptions.h"
#include "clang/Tooling/Tooling.h"
#include "llvm/Support/Path.h"
#include <optional>

using namespace clang;
using namespace llvm;

namespace ddpguard {

bool wrapperIdentifiers(StringRef RuleFiles, StringSet<> &Names,
                        std::string &Error) {
  RuleSet Rules = RuleSet::builtin();
  SmallVector<StringRef, 4> Files;
  RuleFiles.split(Files, ';', -1, /*KeepEmpty=*/false);
  // As the check loads them (MultipleForwardBeforeBackwardCheck.cpp).
  for (StringRef File : Files)
    if (llvm::Error Err = Rules.addFile(File.trim())) {
      Error = toString(std::move(Err));
      return false;
    }
  for (const WrapperRule &Rule : Rules.wrappers()) {
    // ns::Outer::Wrapper -> Wrapper: how every mention of the type, qualified
    // or not, is spelled last.
    StringRef Type(Rule.Type);
    size_t Colons = Type.rfind("::");
    StringRef Last = Colons == StringRef::npos ? Type : Type.drop_front(Colons + 2);
    if (Last.empty()) {
      Error = "a rule's type '" + Rule.Type + "' has no name";
      return false;
    }
    Names.insert(Last);
  }
  return true;
}

const StringSet<> &optimizerIdentifiers() {
  static const StringSet<> Names = {"Optimizer", "Adam", "AdamW", "RMSprop",
                                    "Adagrad", "LBFGS"};
  return Names;
}

namespace {

/// What the scans of a file's compile commands found: it is irrelevant when
/// each command was scanned to the end and none found a name.
struct ScanState {
  unsigned Completed = 0;
  std::optional<Relevance> Found;
};

class ScanAction : public PreprocessorFrontendAction {
public:
  ScanAction(const StringSet<> &Names, const StringSet<> &OutsideOptim,
             ScanState &State)
      : Names(Names), OutsideOptim(OutsideOptim), State(State) {}

protected:
  void ExecuteAction() override {
    if (State.Found)
      return;
    CompilerInstance &CI = getCompilerInstance();
    // What the preprocessor does not lex here: modules and precompiled
    // headers bring declarations in without their tokens.
    if (CI.getLangOpts().Modules || CI.getLangOpts().CPlusPlusModules) {
      State.Found = Relevance{true, "modules are enabled"};
      return;
    }
    if (!CI.getPreprocessorOpts().ImplicitPCHInclude.empty()) {
      State.Found = Relevance{true, "a precompiled header is included"};
      return;
    }
    Preprocessor &PP = CI.getPreprocessor();
    const SourceManager &SM = PP.getSourceManager();
    // LibTorch's optimizer headers, wherever LibTorch is installed.
    auto InOptimFolder = [&](SourceLocation Loc) {
      return SM.getFilename(SM.getSpellingLoc(Loc)).contains("/torch/optim/");
    };
    PP.EnterMainSourceFile();
    Token Tok;
    do {
      PP.Lex(Tok);
      if (const IdentifierInfo *II = Tok.getIdentifierInfo())
        if (Names.contains(II->getName()) ||
            (OutsideOptim.contains(II->getName()) &&
             !InOptimFolder(Tok.getLocation()))) {
          PresumedLoc Where =
              SM.getPresumedLoc(SM.getExpansionLoc(Tok.getLocation()));
          std::string Place = Where.isValid()
                                  ? (Twine(Where.getFilename()) + ":" +
                                     Twine(Where.getLine()))
                                        .str()
                                  : std::string("an unknown place");
          State.Found = Relevance{true, "'" + II->getName().str() + "' at " + Place};
          return;
        }
    } while (Tok.isNot(tok::eof));
    ++State.Completed;
  }

private:
  const StringSet<> &Names;
  const StringSet<> &OutsideOptim;
  ScanState &State;
};

class ScanFactory : public tooling::FrontendActionFactory {
public:
  ScanFactory(const StringSet<> &Names, const StringSet<> &OutsideOptim,
              ScanState &State)
      : Names(Names), OutsideOptim(OutsideOptim), State(State) {}
  std::unique_ptr<FrontendAction> create() override {
    return std::make_unique<ScanAction>(Names, OutsideOptim, State);
  }

private:
  const StringSet<> &Names;
  const StringSet<> &OutsideOptim;
  ScanState &State;
};

} // namespace

Relevance scanTranslationUnit(const std::string &File,
                              const tooling::CompilationDatabase &Database,
                              const std::vector<std::string> &ExtraArgsBefore,
                              const std::vector<std::string> &ExtraArgs,
                              const StringSet<> &Names,
                              const StringSet<> &OutsideOptim) {
  tooling::ClangTool Tool(Database, {File});
  Tool.setPrintErrorMessage(false);
  // clang-tidy's per-file extra arguments (runClangTidy).
  Tool.appendArgumentsAdjuster(
      [&](const tooling::CommandLineArguments &Args, StringRef) {
        tooling::CommandLineArguments Adjusted = Args;
        auto I = Adjusted.begin();
        if (I != Adjusted.end() && !StringRef(*I).starts_with("-"))
          ++I; // the compiler's name
        Adjusted.insert(I, ExtraArgsBefore.begin(), ExtraArgsBefore.end());
        Adjusted.insert(Adjusted.end(), ExtraArgs.begin(), ExtraArgs.end());
        return Adjusted;
      });
  Tool.appendArgumentsAdjuster(tooling::getStripPluginsAdjuster());
  // Counts errors and prints nothing: a unit with an error is parsed, and
  // the full parse reports it.
  DiagnosticConsumer Diagnostics;
  Tool.setDiagnosticConsumer(&Diagnostics);
  ScanState State;
  ScanFactory Factory(Names, OutsideOptim, State);
  int Status = Tool.run(&Factory);
  if (State.Found)
    return *State.Found;
  // Several compile commands for one file: only "nothing found" from every
  // one of them, without an error, skips it.
  if (Status != 0 || Diagnostics.getNumErrors() != 0)
    return {true, "an error while preprocessing it"};
  if (State.Completed == 0 ||
      State.Completed != Database.getCompileCommands(File).size())
    return {true, "not every compile command was preprocessed"};
  return {false, ""};
}

} // namespace ddpguard
