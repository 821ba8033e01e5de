//===- PythonFiles.cpp ----------------------------------------------------===//

#include "PythonFiles.h"
#include "PythonProject.h"
#include "PythonFrontend/PythonFrontend.h"
#include "RegularFile.h"
#include "python-checks/PythonCheck.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Regex.h"

using namespace llvm;

namespace ddpguard {

bool isPythonFile(StringRef Path) {
  // Stubs too, as ruff takes them and pre-commit's "python" type names them.
  StringRef Extension = sys::path::extension(Path);
  return Extension == ".py" || Extension == ".pyi";
}

/// "2.11.0", "2.11.0+cu130", "2.12.0a0": the release part.
static std::optional<TorchVersion> releaseOf(StringRef Text) {
  Regex Release("^([0-9]+\\.[0-9]+(\\.[0-9]+)?)");
  SmallVector<StringRef, 3> Match;
  if (!Release.match(Text.trim(), &Match))
    return std::nullopt;
  return TorchVersion::parse(Match[1]);
}

/// The exact torch pin of a requirements file, pyproject.toml or lock file.
static std::optional<TorchVersion> pinIn(StringRef Name, StringRef Text) {
  // One pattern a format: exact pins only, a range judges nothing.
  const char *Pattern = nullptr;
  if (Name.starts_with("requirements") && Name.ends_with(".txt"))
    Pattern = "(^|\n)[ \t]*torch(\\[[^]]*\\])?[ \t]*==[ \t]*([0-9][0-9.]*)";
  else if (Name == "pyproject.toml")
    Pattern = "([\"']torch(\\[[^]]*\\])?[ \t]*==[ \t]*([0-9][0-9.]*)|"
              "(^|\n)[ \t]*torch[ \t]*=[ \t]*[\"']=?=?([0-9][0-9.]*)[\"'])";
  else if (Name == "uv.lock" || Name == "poetry.lock" || Name == "pdm.lock")
    Pattern = "name = \"torch\"\nversion = \"([0-9][0-9.]*)\"";
  else if (Name == "Pipfile.lock")
    Pattern = "\"torch\": \\{[^}]*\"version\": \"==([0-9][0-9.]*)\"";
  if (!Pattern)
    return std::nullopt;
  SmallVector<StringRef, 6> Match;
  if (!Regex(Pattern).match(Text, &Match))
    return std::nullopt;
  for (StringRef Group : llvm::reverse(Match))
    if (!Group.empty() && isDigit(Group.front()))
      return releaseOf(Group);
  return std::nullopt;
}

JudgedTorch TorchVersionJudge::judge(StringRef File, const PythonConfig &Config,
                                     std::optional<FileProblem> &Problem) {
  if (Override)
    return {*Override, "torch " + Override->str() + ", from --torch-version"};
  if (!Python.empty()) {
    if (!PythonAsked) {
      PythonAsked = true;
      SmallString<128> Output;
      int FD;
      if (!sys::fs::createTemporaryFile("ddpguard-torch", "txt", FD, Output)) {
        sys::fs::closeFile(FD);
        FileRemover Remove(Output);
        std::optional<StringRef> Redirects[] = {std::nullopt, StringRef(Output),
                                                StringRef("")};
        StringRef Args[] = {Python, "-c",
                            "import sys, torch; sys.stdout.write(torch.__version__)"};
        std::string Error;
        int Status = sys::ExecuteAndWait(Python, Args, std::nullopt, Redirects,
                                         /*SecondsToWait=*/120, 0, &Error);
        auto Text = MemoryBuffer::getFile(Output);
        std::optional<TorchVersion> Version;
        if (Status == 0 && Text)
          Version = releaseOf((*Text)->getBuffer());
        if (Version)
          FromPython = JudgedTorch{*Version, "torch " + Version->str() +
                                                 ", the torch of " + Python};
        else
          Problem = FileProblem{
              Python, "--python: could not read torch's version from this "
                      "interpreter (" +
                          (Error.empty() ? "exit status " + std::to_string(Status)
                                         : Error) +
                          "); install torch there or pass --torch-version"};
      }
    }
    if (FromPython)
      return *FromPython;
  }
  if (Config.Torch)
    return {*Config.Torch,
            "torch " + Config.Torch->str() + ", from " + Config.Origin};
  SmallString<256> Dir(sys::path::parent_path(File));
  const char *Names[] = {"uv.lock", "poetry.lock", "pdm.lock", "Pipfile.lock",
                         "pyproject.toml"};
  while (!Dir.empty()) {
    std::vector<std::string> Candidates(std::begin(Names), std::end(Names));
    std::error_code EC;
    for (sys::fs::directory_iterator It(Dir, EC), End; It != End && !EC;
         It.increment(EC)) {
      StringRef Name = sys::path::filename(It->path());
      if (Name.starts_with("requirements") && Name.ends_with(".txt"))
        Candidates.push_back(Name.str());
    }
    for (const std::string &Name : Candidates) {
      SmallString<256> Path(Dir);
      sys::path::append(Path, Name);
      RegularFileRead Text = readRegularFile(Path);
      if (!Text)
        continue;
      if (std::optional<TorchVersion> Pin =
              pinIn(Name, Text.Buffer->getBuffer()))
        return {*Pin, "torch " + Pin->str() + ", pinned in " +
                          workingPath(Path)};
    }
    StringRef Parent = sys::path::parent_path(Dir);
    if (Parent == Dir)
      break;
    Dir = Parent;
  }
  return {OldestSupportedTorch,
          "torch " + OldestSupportedTorch.str() +
              ", the oldest supported (no exact torch pin found; pass "
              "--torch-version or --python)"};
}

/// Checks the sources (file, text) of one run together.
static std::map<std::string, unsigned>
checkPythonTexts(llvm::ArrayRef<std::pair<std::string, StringRef>> Texts,
                 const RuleSet &Rules, TorchVersionJudge &Judge,
                 PythonConfigs &Configs, PythonFixMode FixMode,
                 std::vector<Finding> &Findings,
                 std::vector<FileProblem> &Errors, ContentStamps *Read) {
  std::map<std::string, unsigned> SyntaxErrors;
  std::vector<JudgedTorch> Judgements;
  std::vector<python::SourceFile> Sources;
  for (const auto &[File, Text] : Texts) {
    const PythonConfig &Config = Configs.forFile(File);
    std::optional<FileProblem> Problem;
    Judgements.push_back(Judge.judge(File, Config, Problem));
    if (Problem)
      Errors.push_back(*Problem);
    python::CheckOptions Options;
    Options.Version = Judgements.back().Version;
    Options.AssumeModulesHaveBuffers = Config.AssumeModulesHaveBuffers;
    Sources.push_back({File, Text, Options});
  }
  PythonProject Project = readPythonProject(Texts);
  for (size_t I = 0; I < Texts.size(); ++I)
    Sources[I].SourceRoots = Project.SourceRoots[I];
  for (size_t I = 0; I < Project.Context.size(); ++I) {
    python::SourceFile Context{Project.Context[I].Path,
                               Project.Context[I].Text->getBuffer(),
                               Sources.empty() ? python::CheckOptions()
                                               : Sources.front().Options};
    Context.Context = true;
    Context.SourceRoots = Project.ContextRoots[I];
    // A broadcast fix edits the construction, which may be in a context
    // file, as it does when the folder is checked.
    if (Read)
      Read->record(resolvedPath(Context.Path),
                   ContentStamp::of(Context.Source));
    Sources.push_back(std::move(Context));
  }
  std::vector<python::CheckResult> Results =
      python::checkSources(Sources, Rules);
  for (size_t I = 0; I < Texts.size(); ++I) {
    const std::string &File = Sources[I].Path;
    StringRef Text = Sources[I].Source;
    const JudgedTorch &Judged = Judgements[I];
    const python::CheckResult &Result = Results[I];
    SyntaxErrors[File] = Result.SyntaxErrors.size();
    // The parser reads Python 3.8 to 3.14; what it cannot read may still be
    // Python, so the message does not say the user is wrong.
    for (const python::Position &At : Result.SyntaxErrors)
      Errors.push_back(
          {File,
           "cannot parse line " + std::to_string(At.Line) + ", column " +
               std::to_string(At.Column) +
               " (a syntax error, or Python newer than ddpguard reads); the "
               "rest of the file was checked",
           At.Offset});
    if (Result.TooDeep)
      Errors.push_back(
          {File,
           "nesting deeper than " + std::to_string(python::MaxNestingDepth) +
               " levels at line " + std::to_string(Result.TooDeep->Line) +
               "; this file was not checked (the other files were)",
           Result.TooDeep->Offset});
    // Each check's findings, in the list's order.
    PythonCheckContext Checked{File,    Text,    Judged, Rules,
                               Configs, FixMode, Result, Findings};
#define DDPGUARD_PYTHON_CHECK(Title) python_checks::render##Title(Checked);
#include "PythonFrontend/PythonChecks.def"
  }
  return SyntaxErrors;
}

unsigned checkPythonSource(const std::string &File, StringRef Text,
                           const RuleSet &Rules, TorchVersionJudge &Judge,
                           PythonConfigs &Configs, PythonFixMode FixMode,
                           std::vector<Finding> &Findings,
                           std::vector<FileProblem> &Errors) {
  return checkPythonTexts({{File, Text}}, Rules, Judge, Configs, FixMode,
                          Findings, Errors, /*Read=*/nullptr)[File];
}

std::map<std::string, unsigned>
checkPythonFiles(const std::vector<std::string> &Files, const RuleSet &Rules,
                 TorchVersionJudge &Judge, PythonConfigs &Configs,
                 PythonFixMode FixMode,
                 std::vector<Finding> &Findings,
                 std::vector<FileProblem> &Errors, ContentStamps &Read) {
  // Every file first, so that names one imports from another are followed.
  std::vector<std::unique_ptr<MemoryBuffer>> Buffers;
  std::vector<std::pair<std::string, StringRef>> Texts;
  for (const std::string &File : Files) {
    RegularFileRead Buffer = readRegularFile(File);
    if (!Buffer) {
      Errors.push_back({File, Buffer.missing() ? "no such file or directory"
                                               : Buffer.problem()});
      continue;
    }
    StringRef Text = Buffer.Buffer->getBuffer();
    Read.record(resolvedPath(File), ContentStamp::of(Text));
    Texts.emplace_back(File, Text);
    Buffers.push_back(std::move(Buffer.Buffer));
  }
  return checkPythonTexts(Texts, Rules, Judge, Configs, FixMode, Findings,
                          Errors, &Read);
}

} // namespace ddpguard
