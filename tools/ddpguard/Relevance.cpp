//===- Relevance.cpp ------------------------------------------------------===//

#include "Relevance.h"
#include "Rules/RuleSet.h"
#include "Tidy/CheckNames.h"
#include "clang/Basic/Diagnostic.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Frontend/CompilerInstance.h"
#include "clang/Frontend/FrontendActions.h"
#include "clang/Lex/Preprocessor.h"
#include "clang/Lex/PreprocessorOptions.h"
#include "clang/Tooling/Tooling.h"
#include "clang-tidy/GlobList.h"
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

std::string triggerDescription(unsigned Triggers) {
  std::vector<std::string> Named;
  if (Triggers & checks::WrapperType)
    Named.push_back("no DDP wrapper of the rule set");
  if (Triggers & checks::OptimizerType)
    Named.push_back("no optimizer");
  if (Triggers & checks::BackwardCall)
    Named.push_back("no 'backward'");
  std::string Text;
  for (size_t I = 0; I < Named.size(); ++I)
    Text += (I == 0 ? "" : I + 1 == Named.size() ? " and " : ", ") + Named[I];
  return Text + " is named in it or its headers after preprocessing";
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
  ScanAction(const TriggerNames &Names, ScanState &State)
      : Names(Names), State(State) {}

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
    // LibTorch's optimizer headers and its own headers, wherever LibTorch
    // is installed: its include folders are torch, ATen and c10.
    auto Folder = [&](SourceLocation Loc) {
      return SM.getFilename(SM.getSpellingLoc(Loc));
    };
    auto InOptimFolder = [&](SourceLocation Loc) {
      return Folder(Loc).contains("/torch/optim/");
    };
    auto InLibTorch = [&](SourceLocation Loc) {
      StringRef Path = Folder(Loc);
      return Path.contains("/torch/") || Path.contains("/ATen/") ||
             Path.contains("/c10/");
    };
    PP.EnterMainSourceFile();
    Token Tok;
    do {
      PP.Lex(Tok);
      if (const IdentifierInfo *II = Tok.getIdentifierInfo())
        if (Names.Anywhere.contains(II->getName()) ||
            (Names.OutsideOptim.contains(II->getName()) &&
             !InOptimFolder(Tok.getLocation())) ||
            (Names.OutsideLibTorch.contains(II->getName()) &&
             !InLibTorch(Tok.getLocation()))) {
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
  const TriggerNames &Names;
  ScanState &State;
};

class ScanFactory : public tooling::FrontendActionFactory {
public:
  ScanFactory(const TriggerNames &Names, ScanState &State)
      : Names(Names), State(State) {}
  std::unique_ptr<FrontendAction> create() override {
    return std::make_unique<ScanAction>(Names, State);
  }

private:
  const TriggerNames &Names;
  ScanState &State;
};

} // namespace

Relevance scanTranslationUnit(const std::string &File,
                              const tooling::CompilationDatabase &Database,
                              const std::vector<std::string> &ExtraArgsBefore,
                              const std::vector<std::string> &ExtraArgs,
                              const TriggerNames &Names) {
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
  ScanFactory Factory(Names, State);
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

const StringSet<> *WrapperNames::get(const std::string &RuleFiles) {
  std::lock_guard<std::mutex> Lock(Mutex);
  auto [It, Inserted] = Loaded.try_emplace(RuleFiles);
  if (Inserted) {
    std::string Error;
    if (!wrapperIdentifiers(RuleFiles, It->second.Names, Error))
      It->second.Valid = false;
  }
  return It->second.Valid ? &It->second.Names : nullptr;
}

unsigned enabledTriggers(const clang::tidy::ClangTidyOptions &Options) {
  std::optional<clang::tidy::GlobList> Enabled;
  if (Options.Checks)
    Enabled.emplace(*Options.Checks);
  unsigned Triggers = 0;
  for (const checks::CheckInfo &Check : checks::Table)
    if (!Enabled || Enabled->contains(Check.Name))
      Triggers |= Check.Triggers;
  return Triggers;
}

bool irrelevant(const std::string &File,
                const clang::tidy::ClangTidyOptions &Options,
                const tooling::CompilationDatabase &Database,
                WrapperNames &Names, unsigned Triggers) {
  auto Option = [&](StringRef Name) -> std::optional<std::string> {
    auto It = Options.CheckOptions.find(
        (Twine(checks::MultipleForwardBeforeBackward) + "." + Name).str());
    if (It == Options.CheckOptions.end())
      return std::nullopt;
    return It->getValue().Value;
  };
  std::optional<std::string> Mode = Option("FixMode");
  if (Mode && *Mode != "broadcast" && *Mode != "fuse" &&
      *Mode != "once-per-backward")
    return false;
  std::optional<std::string> Assume = Option("AssumeModulesHaveBuffers");
  if (Assume && *Assume != "true" && *Assume != "false")
    return false;
  const StringSet<> *Identifiers = Names.get(Option("RuleFiles").value_or(""));
  if (!Identifiers)
    return false;
  TriggerNames Looked;
  if (Triggers & checks::WrapperType)
    for (const auto &Name : *Identifiers)
      Looked.Anywhere.insert(Name.getKey());
  if (Triggers & checks::OptimizerType)
    for (const auto &Name : optimizerIdentifiers())
      Looked.OutsideOptim.insert(Name.getKey());
  if (Triggers & checks::BackwardCall)
    Looked.OutsideLibTorch.insert("backward");
  Relevance R = scanTranslationUnit(
      File, Database, Options.ExtraArgsBefore.value_or(clang::tidy::ClangTidyOptions::ArgList()),
      Options.ExtraArgs.value_or(clang::tidy::ClangTidyOptions::ArgList()), Looked);
  return !R.Relevant;
}

} // namespace ddpguard
