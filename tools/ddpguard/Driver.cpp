//===- Driver.cpp - The ddpguard command line -----------------------------===//
//
// ddpguard [options] <files...> [-- <compile flags>]
// ddpguard [options] -p <build dir>      (every file of the database)
//
// Runs ddpguard's checks (lib/Tidy/CheckNames.h) through clang-tidy's
// engine on each file, keeps those on the lines --diff-base or --line-filter
// select (docs/ci.md), prints them as text, JSON, SARIF or rdjsonl, and with
// --fix applies them (over exactly what was parsed, through links) and
// re-checks the fixed files. Exit status, for Python and C++ files alike: 0
// clean, 1 findings, 2 any error (usage, parse, configuration, compilation
// database, I/O); a file skipped (a folder's C++ source without a database
// in a run with Python files, a FIFO met in a folder) gets one line on
// standard error that says why, and changes nothing. The behaviour is
// documented in lib/Tidy/MultipleForwardBeforeBackwardCheck.md,
// lib/Tidy/OptimizerStepBeforeBackwardCheck.md,
// lib/Tidy/ParameterWriteBeforeBackwardCheck.md and
// lib/Tidy/InPlaceWriteBeforeBackwardCheck.md.
//
// Without files, every translation unit of the -p database is checked, and
// one whose preprocessed tokens name no wrapper of the rule set and no
// optimizer is skipped
// unparsed (Relevance.h; --no-skip parses all), with a progress line on a
// terminal and a summary at the end (docs/ci.md).
//
//===----------------------------------------------------------------------===//

#include "CrossFile.h"
#include "Database.h"
#include "FixWriter.h"
#include "FolderWalk.h"
#include "LineFilter.h"
#include "PythonFiles.h"
#include "Relevance.h"
#include "Report.h"
#include "RuffOutput.h"
#include "Rules/RuleSet.h"
#include "Tidy/CheckNames.h"
#include "clang-tidy/ClangTidy.h"
#include "clang-tidy/ClangTidyOptions.h"
#include "clang-tidy/GlobList.h"
#include "clang/Tooling/CompilationDatabase.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/VirtualFileSystem.h"
#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>

using namespace clang;
using namespace clang::tidy;
using namespace llvm;
using namespace ddpguard;

/// The DDP check, whose options the CLI's own options set.
static constexpr StringRef CheckName = checks::MultipleForwardBeforeBackward;

// --help groups the options: those of every run, with ruff's names where
// ruff has the option (docs/python-checker.md), then the Python files' and
// the C++ files' own (clang-tidy's names). --help lists the groups sorted by
// name, so the names put them in that order.
static cl::OptionCategory Category("Options (Python and C++ files)");
static cl::OptionCategory PythonCategory("Python options");
static cl::OptionCategory
    CppCategory("clang-tidy's options, for C++ files (its names and "
                "conventions)");
static cl::list<std::string> SourcePaths(
    cl::Positional, cl::ZeroOrMore,
    cl::desc("<files or folders> (none: every file of the -p compilation "
             "database)"),
    cl::cat(Category));
static cl::opt<std::string> BuildPath(
    "p", cl::desc("Build directory holding compile_commands.json"),
    cl::value_desc("dir"), cl::cat(CppCategory));
static cl::opt<bool> Fix("fix", cl::desc("Apply the fixes to the files"),
                         cl::cat(Category));
static cl::opt<bool> PreviewFixes(
    "diff",
    cl::desc("Print the fixes as a unified diff and write nothing, as ruff's "
             "--diff (exit status 1 when there is a fix; the git revision "
             "option is --diff-base)"),
    cl::cat(Category));
static cl::list<std::string> Select(
    "select",
    cl::desc("Report only these checks: names or prefixes of names, comma "
             "separated ('ddp-', 'ALL'); replaces the select and ignore of "
             "[tool.ddpguard]"),
    cl::CommaSeparated, cl::value_desc("checks"), cl::cat(Category));
static cl::list<std::string> Ignore(
    "ignore",
    cl::desc("Do not report these checks: names or prefixes of names, comma "
             "separated; adds to the ignore of [tool.ddpguard]"),
    cl::CommaSeparated, cl::value_desc("checks"), cl::cat(Category));
static cl::opt<bool> ExitZero(
    "exit-zero",
    cl::desc("Exit with status 0 even when there are findings (2 still "
             "means an error)"),
    cl::cat(Category));
static cl::opt<bool> Statistics(
    "statistics",
    cl::desc("Print the number of findings of each check instead of the "
             "findings"),
    cl::cat(Category));
static cl::opt<bool> ShowFixes(
    "show-fixes",
    cl::desc("With --fix, list the findings fixed; without it, say under "
             "each fixable finding what its fix does"),
    cl::cat(Category));
static cl::opt<bool> QuietOutput("quiet",
                           cl::desc("Print the findings and nothing else (no "
                                    "summary line)"),
                           cl::cat(Category));
static cl::alias QuietShort("q", cl::desc("Alias for --quiet"),
                            cl::aliasopt(QuietOutput), cl::cat(Category));
enum class FixModeKind { Broadcast, Fuse, OncePerBackward };
static cl::opt<FixModeKind> FixMode(
    "fix-mode", cl::desc("Which fix the warnings carry"),
    cl::values(clEnumValN(FixModeKind::Broadcast, "broadcast",
                          "set broadcast_buffers to false at the construction"),
               clEnumValN(FixModeKind::Fuse, "fuse",
                          "fuse consecutive forwards into one fused forward"),
               clEnumValN(FixModeKind::OncePerBackward, "once-per-backward",
                          "broadcast buffers once per backward (set at the "
                          "construction; ddpguard's DDP)")),
    cl::init(FixModeKind::Broadcast), cl::cat(Category));
static cl::opt<std::string> ExportFixes(
    "export-fixes",
    cl::desc("Write the fixes to a YAML file clang-apply-replacements reads"),
    cl::value_desc("file"), cl::cat(CppCategory));
enum class FormatKind { Concise, Full, Json, Sarif, Github, Rdjsonl };
static cl::opt<FormatKind> Format(
    "output-format",
    cl::desc("Output format (default: concise, or full when C++ files are "
             "checked, as clang-tidy prints)"),
    cl::values(
        clEnumValN(FormatKind::Concise, "concise",
                   "one line per finding, as ruff's; the notes every finding "
                   "repeats (the torch judged by) once per run"),
        clEnumValN(FormatKind::Full, "full",
                   "each finding with all its notes, as clang prints them"),
        clEnumValN(FormatKind::Json, "json", "one JSON document"),
        clEnumValN(FormatKind::Sarif, "sarif", "SARIF 2.1.0"),
        clEnumValN(FormatKind::Github, "github",
                   "GitHub Actions annotations (::error file=...)"),
        clEnumValN(FormatKind::Rdjsonl, "rdjsonl",
                   "reviewdog's rdjsonl: one JSON diagnostic a line")),
    cl::init(FormatKind::Concise), cl::cat(Category));
// The name before --output-format; text is full.
static cl::opt<FormatKind> LegacyFormat(
    "format", cl::desc("Older name of --output-format (text: full)"),
    cl::values(clEnumValN(FormatKind::Full, "text", "full"),
               clEnumValN(FormatKind::Json, "json", "json"),
               clEnumValN(FormatKind::Sarif, "sarif", "sarif"),
               clEnumValN(FormatKind::Rdjsonl, "rdjsonl", "rdjsonl")),
    cl::Hidden, cl::cat(Category));
static cl::opt<std::string> SarifHelpUriBase(
    "sarif-help-uri-base",
    cl::desc("Give each SARIF rule a helpUri: this absolute URI followed by "
             "the rule id (no helpUri without it)"),
    cl::value_desc("uri"), cl::cat(Category));
static cl::opt<std::string> DiffRev(
    "diff-base",
    cl::desc("Report only findings whose warning or notes (forwards, "
             "backward, construction) lie on lines changed since this git "
             "revision (git diff -U0 <rev>, run in each file's directory)"),
    cl::value_desc("rev"), cl::cat(Category));
static cl::opt<std::string> LineFilterJson(
    "line-filter",
    cl::desc("Report only findings whose warning or notes lie on these "
             "lines, in clang-tidy's --line-filter JSON: "
             "'[{\"name\":\"file.cpp\",\"lines\":[[1,3],[7,9]]},...]'"),
    cl::value_desc("json"), cl::cat(CppCategory));
static cl::list<std::string> Rules("rules",
                                   cl::desc("Add a rule file (repeatable)"),
                                   cl::value_desc("file"), cl::cat(Category));
// -j2 as well as -j 2, as make and run-clang-tidy take it.
static cl::opt<unsigned> Jobs("j", cl::desc("Files checked in parallel"),
                              cl::init(1), cl::Prefix, cl::cat(CppCategory));
static cl::opt<std::string> HeaderFilter(
    "header-filter",
    cl::desc("Regular expression matching the headers whose findings are "
             "reported, as clang-tidy's --header-filter (overrides "
             "HeaderFilterRegex of .clang-tidy; default '.*': every "
             "non-system header). Findings in the files named on the "
             "command line are always reported"),
    cl::value_desc("regex"), cl::cat(CppCategory));
static cl::opt<std::string> ExcludeHeaderFilter(
    "exclude-header-filter",
    cl::desc("Regular expression matching headers whose findings are not "
             "reported (overrides ExcludeHeaderFilterRegex of .clang-tidy)"),
    cl::value_desc("regex"), cl::cat(CppCategory));
static cl::opt<std::string> FormatStyle(
    "format-style",
    cl::desc("Style to format the lines --fix changes in, as clang-tidy's "
             "--format-style: 'file' (default) uses the .clang-format above "
             "each file and leaves fixes as they are without one; 'none' "
             "never formats; or a style name such as 'llvm'"),
    cl::init("file"), cl::value_desc("style"), cl::cat(CppCategory));
static cl::opt<std::string> RunBeforeWritingFixes(
    "run-before-writing-fixes",
    cl::desc("Testing only: run this shell command after the check and "
             "before --fix writes"),
    cl::Hidden, cl::cat(Category));
static cl::opt<bool> ShowCompilerWarnings(
    "show-compiler-warnings",
    cl::desc("Also print the compiler's own warnings (those the compile "
             "flags enable); they do not change the exit status"),
    cl::cat(CppCategory));
static cl::opt<bool> NoSkip(
    "no-skip",
    cl::desc("Without files (-p only): parse every translation unit, also "
             "those whose preprocessed tokens name no DDP wrapper of the "
             "rule set"),
    cl::cat(CppCategory));
static cl::opt<bool> ListChecks(
    "list-checks",
    cl::desc("List the checks: name, fix availability, summary and doc page "
             "(as JSON with --output-format=json), and exit"),
    cl::cat(Category));
static cl::opt<bool> ExplainSkips(
    "explain-skips",
    cl::desc("Without files (-p only): name each translation unit skipped "
             "as irrelevant on standard error"),
    cl::cat(CppCategory));
static cl::opt<bool> AssumeBuffers(
    "assume-modules-have-buffers",
    cl::desc("Report even when the wrapped module provably has no buffers"),
    cl::cat(Category));
static cl::opt<std::string> TorchVersionOption(
    "torch-version",
    cl::desc("Judge Python files by this torch version (default: that of "
             "--python, else the project's exact torch pin, else 2.11.0)"),
    cl::value_desc("X.Y.Z"), cl::cat(PythonCategory));
static cl::opt<bool> ForceExclude(
    "force-exclude",
    cl::desc("Skip the Python files named on the command line that the "
             "exclude of their [tool.ddpguard] matches, as ruff's "
             "--force-exclude (for pre-commit, which names every file)"),
    cl::cat(PythonCategory));
static cl::opt<std::string> PythonInterpreter(
    "python",
    cl::desc("Judge Python files by the torch this interpreter imports"),
    cl::value_desc("path"), cl::cat(PythonCategory));
static cl::opt<bool> FollowLinks(
    "follow-links",
    cl::desc("Follow links to folders when walking a folder (each real "
             "folder is still entered once); without it they are skipped, as "
             "ruff and git skip them"),
    cl::cat(Category));
static cl::opt<std::string> StdinFilename(
    "stdin-filename",
    cl::desc("Check the Python source read from standard input as this .py "
             "file (its torch pins, its name in the report); with --fix, "
             "print the fixed source to standard output (the report goes to "
             "standard error) and write no file"),
    cl::value_desc("path"), cl::cat(PythonCategory));

namespace {

struct FileResult {
  std::vector<Finding> Findings;
  std::vector<ClangTidyError> CompilerWarnings;
  std::optional<FileProblem> ParseError;
  /// Configuration errors: a .clang-tidy that does not parse, an option
  /// value the check rejects.
  std::vector<FileProblem> ConfigErrors;
  std::vector<FileProblem> ConfigWarnings;
  /// Warnings in headers the header filter leaves out.
  std::vector<ClangTidyError> Suppressed;
  /// Not parsed: its preprocessed tokens name none of the Triggers of the
  /// checks that run (Relevance.h).
  bool Skipped = false;
  unsigned Triggers = 0;
  /// What other files need to know of it, and it of them (CrossFile.h).
  crossfile::Facts CrossFile;
};

/// How the files of one run are checked.
struct CheckPolicy {
  /// Whole-repository mode: skip irrelevant translation units.
  bool MaySkip = false;
  /// Whole-repository mode on a terminal: "[i/n] file" on standard error.
  bool Progress = false;
};

ClangTidyOptions overrideOptions() {
  ClangTidyOptions Options;
  Options.Checks = "-*";
  for (StringRef Check : checks::All)
    *Options.Checks += ("," + Check).str();
  *Options.Checks += std::string(",") + crossfile::IndexCheckName;
  if (ShowCompilerWarnings)
    *Options.Checks += ",clang-diagnostic-*";
  auto Set = [&](StringRef Name, std::string Value) {
    Options.CheckOptions[(Twine(CheckName) + "." + Name).str()] =
        ClangTidyOptions::ClangTidyValue(Value);
  };
  if (FixMode.getNumOccurrences())
    Set("FixMode", FixMode == FixModeKind::Fuse ? "fuse"
                   : FixMode == FixModeKind::OncePerBackward
                       ? "once-per-backward"
                       : "broadcast");
  if (!Rules.empty()) {
    std::vector<std::string> Absolute;
    for (const std::string &File : Rules) {
      SmallString<256> Path(File);
      sys::fs::make_absolute(Path);
      Absolute.push_back(std::string(Path));
    }
    // The step check reads them too, for steps over a DDP object's module.
    for (StringRef Check : checks::All)
      Options.CheckOptions[(Check + ".RuleFiles").str()] =
          ClangTidyOptions::ClangTidyValue(llvm::join(Absolute, ";"));
  }
  if (AssumeBuffers)
    Set("AssumeModulesHaveBuffers", "true");
  if (HeaderFilter.getNumOccurrences())
    Options.HeaderFilterRegex = HeaderFilter;
  if (ExcludeHeaderFilter.getNumOccurrences())
    Options.ExcludeHeaderFilterRegex = ExcludeHeaderFilter;
  return Options;
}

/// Paths in a database may be relative to its build directory.
std::string absolutePath(StringRef Path, StringRef BuildDirectory) {
  if (Path.empty() || sys::path::is_absolute(Path))
    return Path.str();
  SmallString<256> Absolute(BuildDirectory);
  sys::path::append(Absolute, Path);
  sys::path::remove_dots(Absolute, /*remove_dot_dot=*/true);
  return std::string(Absolute);
}

void makePathsAbsolute(ClangTidyError &E) {
  auto Fix = [&](tooling::DiagnosticMessage &M) {
    M.FilePath = absolutePath(M.FilePath, E.BuildDirectory);
    llvm::StringMap<tooling::Replacements> Fixes;
    for (const auto &[File, Replacements] : M.Fix)
      for (const tooling::Replacement &R : Replacements)
        llvm::consumeError(
            Fixes[absolutePath(File, E.BuildDirectory)].add(tooling::Replacement(
                absolutePath(R.getFilePath(), E.BuildDirectory), R.getOffset(),
                R.getLength(), R.getReplacementText())));
    M.Fix = std::move(Fixes);
  };
  Fix(E.Message);
  for (tooling::DiagnosticMessage &Note : E.Notes)
    Fix(Note);
}

/// Our defaults: clang-tidy's, but findings in every non-system header are
/// reported, as clang-tidy does from LLVM 22 on.
ClangTidyOptions defaultOptions() {
  ClangTidyOptions Options = ClangTidyOptions::getDefaults();
  Options.HeaderFilterRegex = ".*";
  Options.ExcludeHeaderFilterRegex = "";
  return Options;
}

/// A FileOptionsProvider with our own configuration file handlers. The
/// constructor that takes handlers leaves the file system unset (clang-tidy
/// 19), so set the real one.
///
/// clang-tidy itself runs with every header let through: the header filter
/// is applied afterwards (filterHeaders), so that what it leaves out can be
/// counted once across translation units.
class HandlerOptionsProvider : public FileOptionsProvider {
public:
  explicit HandlerOptionsProvider(ConfigFileHandlers Handlers)
      : FileOptionsProvider(ClangTidyGlobalOptions(), defaultOptions(),
                            overrideOptions(), std::move(Handlers)) {
    FS = vfs::getRealFileSystem();
  }
  std::vector<OptionsSource> getRawOptions(StringRef FileName) override {
    std::vector<OptionsSource> Sources =
        FileOptionsProvider::getRawOptions(FileName);
    ClangTidyOptions Everything;
    Everything.HeaderFilterRegex = ".*";
    Everything.ExcludeHeaderFilterRegex = "";
    Sources.emplace_back(std::move(Everything), "ddpguard's header filter");
    return Sources;
  }
  /// The options as the user set them: defaults, .clang-tidy, command line.
  ClangTidyOptions userOptions(StringRef FileName) {
    ClangTidyOptions Result;
    unsigned Priority = 0;
    for (const OptionsSource &Source :
         FileOptionsProvider::getRawOptions(FileName))
      Result.mergeWith(Source.first, ++Priority);
    return Result;
  }
};

/// clang-tidy's header filter: a warning is shown when it or one of its notes
/// is in the main file or in a header that HeaderFilterRegex matches and
/// ExcludeHeaderFilterRegex does not. The regexes see file names as Clang
/// spells them (the include path joined with the #include).
class HeaderFilterSet {
public:
  HeaderFilterSet(const ClangTidyOptions &Options, std::string MainFile,
                  std::vector<FileProblem> &Problems, StringRef Source)
      : Header(Options.HeaderFilterRegex.value_or("")),
        Exclude(Options.ExcludeHeaderFilterRegex.value_or("")),
        MainFile(std::move(MainFile)) {
    auto Validate = [&](const Regex &R, StringRef Name,
                        const std::optional<std::string> &Text) {
      std::string Error;
      if (Text && !Text->empty() && !R.isValid(Error))
        Problems.push_back({Source.str(), "configuration error: invalid " +
                                              Name.str() + " '" + *Text +
                                              "': " + Error});
    };
    Validate(Header, "HeaderFilterRegex", Options.HeaderFilterRegex);
    Validate(Exclude, "ExcludeHeaderFilterRegex",
             Options.ExcludeHeaderFilterRegex);
  }

  bool shows(const ClangTidyError &E) const {
    auto Passes = [&](const tooling::DiagnosticMessage &M) {
      if (M.FilePath.empty())
        return false;
      std::string Absolute = absolutePath(M.FilePath, E.BuildDirectory);
      if (Absolute == MainFile || sys::fs::equivalent(Absolute, MainFile))
        return true;
      // An empty or invalid regex matches nothing, as in clang-tidy.
      return Header.isValid() && Header.match(M.FilePath) &&
             !(Exclude.isValid() && Exclude.match(M.FilePath));
    };
    return Passes(E.Message) || llvm::any_of(E.Notes, Passes);
  }

private:
  Regex Header;
  Regex Exclude;
  std::string MainFile;
};

/// Reads .clang-tidy files as clang-tidy does, except that one that does not
/// parse is an error with its place (clang-tidy prints it and goes on as if
/// the file were not there). Warnings (an unknown key) stay warnings.
std::unique_ptr<HandlerOptionsProvider>
makeOptionsProvider(FileResult &Result) {
  using Parser = std::function<ErrorOr<ClangTidyOptions>(MemoryBufferRef)>;
  Parser Parse = [&Result](MemoryBufferRef Config) -> ErrorOr<ClangTidyOptions> {
    size_t Before = Result.ConfigErrors.size();
    ErrorOr<ClangTidyOptions> Parsed = parseConfigurationWithDiags(
        Config, [&](const SMDiagnostic &D) {
          FileProblem Problem{
              D.getFilename().str(),
              ("configuration error at line " + Twine(D.getLineNo()) +
               ", column " + Twine(D.getColumnNo() + 1) + ": " +
               D.getMessage())
                  .str()};
          (D.getKind() == SourceMgr::DK_Error ? Result.ConfigErrors
                                              : Result.ConfigWarnings)
              .push_back(std::move(Problem));
        });
    if (Parsed)
      return Parsed;
    if (Result.ConfigErrors.size() == Before)
      Result.ConfigErrors.push_back({Config.getBufferIdentifier().str(),
                                     "configuration error: " +
                                         Parsed.getError().message()});
    // Reported; go on with the defaults rather than have clang-tidy print it
    // again.
    return ClangTidyOptions();
  };
  std::vector<std::pair<std::string, Parser>> Handlers;
  Handlers.emplace_back(".clang-tidy", std::move(Parse));
  return std::make_unique<HandlerOptionsProvider>(std::move(Handlers));
}

/// The configuration file that last sets one of the check's options for
/// File, which a configuration error is most likely about; File itself when
/// the options come from the command line or nowhere.
std::string checkOptionsSource(ClangTidyOptionsProvider &Provider,
                               const std::string &File) {
  std::string Source = File;
  for (const auto &[Options, Name] : Provider.getRawOptions(File)) {
    bool SetsOption = llvm::any_of(Options.CheckOptions, [&](const auto &Entry) {
      return checks::isDdpguardCheck(StringRef(Entry.getKey()).rsplit('.').first);
    });
    if (SetsOption && sys::fs::is_regular_file(Name))
      Source = Name;
  }
  return Source;
}

/// E as a finding with what its check recorded of it (FindingRecord.h):
/// the first record not yet taken of its check at its place.
Finding recordedFinding(ClangTidyError E,
                        const std::vector<FindingRecord> &Records,
                        std::vector<bool> &Used) {
  Finding F(std::move(E));
  std::string Path = resolvedPath(F.Message.FilePath);
  for (size_t I = 0; I < Records.size(); ++I)
    if (!Used[I] && Records[I].Check == F.DiagnosticName &&
        Records[I].At.Offset == F.Message.FileOffset &&
        resolvedPath(Records[I].At.File) == Path) {
      Used[I] = true;
      F.apply(Records[I], resolvedPath);
      break;
    }
  return F;
}

FileResult checkFile(const std::string &File,
                     const tooling::CompilationDatabase &Database,
                     ContentStamps &Stamps, LineTable &Lines,
                     const CheckPolicy &Policy, WrapperNames &Names) {
  FileResult Result;
  std::unique_ptr<HandlerOptionsProvider> Provider =
      makeOptionsProvider(Result);
  std::string ConfigSource = checkOptionsSource(*Provider, File);
  ClangTidyOptions UserOptions = Provider->userOptions(File);
  HeaderFilterSet Filter(UserOptions, File, Result.ConfigErrors, ConfigSource);
  // A .clang-tidy that does not parse is reported whether or not the file is
  // skipped (Result.ConfigErrors holds it already).
  Result.Triggers = enabledTriggers(UserOptions);
  if (Policy.MaySkip && Result.ConfigErrors.empty() &&
      irrelevant(File, UserOptions, Database, Names, Result.Triggers)) {
    Result.Skipped = true;
    return Result;
  }
  ClangTidyContext Context(std::move(Provider));
  // Stamps what the front end reads, so that --fix writes only over that.
  IntrusiveRefCntPtr<vfs::OverlayFileSystem> FS(new vfs::OverlayFileSystem(
      recordingFileSystem(vfs::getRealFileSystem(), Stamps)));
  std::vector<ClangTidyError> Errors;
  std::vector<FindingRecord> Records;
  {
    crossfile::FactsScope IndexInto(Result.CrossFile);
    RecordScope RecordInto(Records);
    Errors = runClangTidy(Context, Database, {File}, FS, /*ApplyAnyFix=*/true);
  }
  std::vector<bool> RecordUsed(Records.size());
  for (ClangTidyError &E : Errors) {
    bool Shown = Filter.shows(E);
    makePathsAbsolute(E);
    // What the plugin reports as [clang-tidy-config].
    if (E.DiagnosticName == "clang-tidy-config") {
      Result.ConfigErrors.push_back(
          {ConfigSource, "configuration error: " + E.Message.Message});
      continue;
    }
    if (E.DiagLevel == ClangTidyError::Error) {
      if (!Result.ParseError) {
        std::string Where = E.Message.FilePath.empty()
                                ? File
                                : E.Message.FilePath;
        if (!E.Message.FilePath.empty()) {
          auto [Line, Column] =
              Lines.position(E.Message.FilePath, E.Message.FileOffset);
          Where += ":" + std::to_string(Line) + ":" + std::to_string(Column);
        }
        Result.ParseError =
            FileProblem{File, "does not parse: " + Where + ": " + E.Message.Message};
      }
      continue;
    }
    bool Compiler = ShowCompilerWarnings &&
                    StringRef(E.DiagnosticName).starts_with("clang-diagnostic-");
    if (!checks::isDdpguardCheck(E.DiagnosticName) && !Compiler)
      continue;
    if (!Shown)
      Result.Suppressed.push_back(std::move(E));
    else if (Compiler)
      Result.CompilerWarnings.push_back(std::move(E));
    else
      Result.Findings.push_back(recordedFinding(std::move(E), Records, RecordUsed));
  }
  return Result;
}

/// Checks Files with Jobs threads; results keep the order of Files.
std::vector<FileResult> checkFiles(const std::vector<std::string> &Files,
                                   const tooling::CompilationDatabase &Database,
                                   ContentStamps &Stamps,
                                   const CheckPolicy &Policy) {
  std::vector<FileResult> Results(Files.size());
  std::atomic<size_t> Next{0};
  std::mutex ProgressMutex;
  size_t Started = 0;
  WrapperNames Names;
  auto Worker = [&] {
    LineTable Lines;
    for (size_t I = Next++; I < Files.size(); I = Next++) {
      if (Policy.Progress) {
        std::lock_guard<std::mutex> Lock(ProgressMutex);
        errs() << "[" << ++Started << "/" << Files.size() << "] "
               << workingPath(Files[I]) << "\n";
      }
      Results[I] = checkFile(Files[I], Database, Stamps, Lines, Policy, Names);
    }
  };
  unsigned Threads = std::max(1u, std::min<unsigned>(Jobs, Files.size()));
  std::vector<std::thread> Pool;
  for (unsigned T = 1; T < Threads; ++T)
    Pool.emplace_back(Worker);
  Worker();
  for (std::thread &T : Pool)
    T.join();
  return Results;
}

/// Follows the findings on DDP parameters whose objects come from other
/// files of the run (CrossFile.h); Unchecked are the database's translation
/// units the run did not parse.
void resolveAcrossFiles(std::vector<FileResult> &Results,
                        const std::vector<std::string> &Unchecked) {
  std::vector<const crossfile::Facts *> All;
  for (const FileResult &R : Results)
    All.push_back(&R.CrossFile);
  crossfile::CrossFileResolver Resolver(All, Unchecked);
  for (FileResult &R : Results)
    Resolver.resolve(R.CrossFile, R.Findings);
}

void printErrors(const std::vector<FileProblem> &Errors) {
  for (const FileProblem &E : Errors)
    errs() << "ddpguard: error: " << E.File << ": " << E.Message << "\n";
}

/// Writes the exported fixes; a failure (no such directory, a full disk) is
/// an error, and a partly written regular file is removed.
Error writeExport(StringRef Path, StringRef Contents) {
  std::error_code EC;
  raw_fd_ostream OS(Path, EC, sys::fs::OF_Text);
  if (EC)
    return createStringError(EC, "cannot write the exported fixes: %s",
                             EC.message().c_str());
  OS << Contents;
  OS.close();
  if (!OS.has_error())
    return Error::success();
  std::error_code WriteError = OS.error();
  OS.clear_error();
  sys::fs::file_status Status;
  bool Regular = !sys::fs::status(Path, Status) &&
                 Status.type() == sys::fs::file_type::regular_file;
  if (Regular)
    sys::fs::remove(Path);
  return createStringError(WriteError, "cannot write the exported fixes: %s%s",
                           WriteError.message().c_str(),
                           Regular ? " (the partial file was removed)" : "");
}

} // namespace

/// A run of Python files alone needs no compile commands: none.
static Expected<LoadedDatabase> noDatabase() {
  LoadedDatabase Loaded;
  Loaded.Database = std::make_unique<tooling::FixedCompilationDatabase>(
      ".", std::vector<std::string>());
  Loaded.Exact = Loaded.Database.get();
  Loaded.Source = "no compile commands (Python files only)";
  Loaded.FromCommandLine = true;
  return Loaded;
}

/// The translation units under Directory.
static std::vector<std::string> unitsUnder(std::vector<std::string> Units,
                                           StringRef Directory) {
  SmallString<256> Root(Directory);
  sys::fs::make_absolute(Root);
  sys::path::remove_dots(Root, /*remove_dot_dot=*/true);
  llvm::erase_if(Units, [&](const std::string &Unit) {
    StringRef Path(Unit);
    return !Path.consume_front(Root) ||
           !(Path.empty() || sys::path::is_separator(Path.front()));
  });
  return Units;
}

/// The format of this run: --output-format, else --format, else concise, or
/// full when C++ files are checked (clang-tidy prints every note).
static FormatKind outputFormat(bool ChecksCpp) {
  if (Format.getNumOccurrences())
    return Format;
  if (LegacyFormat.getNumOccurrences())
    return LegacyFormat;
  return ChecksCpp ? FormatKind::Full : FormatKind::Concise;
}

/// ruff's conventions for a person reading (concise, or a format named with
/// --output-format): a summary line, and after --fix only what is left. A
/// C++ run's default, or --format=text, keeps clang-tidy's: the findings
/// alone, those --fix fixes included.
static bool ruffStyle(FormatKind Kind) {
  return Kind == FormatKind::Concise ||
         (Format.getNumOccurrences() &&
          (Kind == FormatKind::Full || Kind == FormatKind::Github));
}

/// Sorts the report by file, line and column, and writes it.
static void writeReport(raw_ostream &OS, RunReport &Report, LineTable &Lines,
                        const SarifOptions &Sarif, FormatKind Kind) {
  sortReport(Report, Lines);
  if (Statistics && (Kind == FormatKind::Concise || Kind == FormatKind::Full)) {
    writeStatistics(OS, Report);
    return;
  }
  switch (Kind) {
  case FormatKind::Concise:
    writeConcise(OS, Report, Lines, ShowFixes);
    break;
  case FormatKind::Full:
    writeText(OS, Report, Lines);
    break;
  case FormatKind::Github:
    writeGithub(OS, Report, Lines);
    break;
  case FormatKind::Json:
    writeJson(OS, Report, Lines);
    break;
  case FormatKind::Sarif:
    writeSarif(OS, Report, Lines, Sarif);
    break;
  case FormatKind::Rdjsonl:
    writeRdjsonl(OS, Report, Lines);
    break;
  }
}

/// The summary line of the formats a person reads (not with --quiet), after
/// the findings fixed when --show-fixes asks for them.
static void writeRunSummary(raw_ostream &OS, const RunReport &Report,
                            FormatKind Kind,
                            const std::vector<std::string> &FixedFindings) {
  if (QuietOutput || Kind == FormatKind::Github || !ruffStyle(Kind))
    return;
  if (ShowFixes && !FixedFindings.empty()) {
    OS << "Fixed:\n";
    for (const std::string &Line : FixedFindings)
      OS << "  " << Line << "\n";
  }
  writeSummary(OS, Report, FixedFindings.size());
}

/// Why --stdin-filename cannot run with the other arguments; empty when it
/// can.
static std::string stdinUsageError() {
  if (!SourcePaths.empty())
    return "--stdin-filename checks standard input only: name no file "
           "besides it (got '" +
           SourcePaths.front() + "')";
  if (!isPythonFile(StdinFilename))
    return "--stdin-filename=" + StdinFilename +
           ": only a Python source (a .py file) can be read from standard "
           "input; a C++ file needs its compile command";
  if (DiffRev.getNumOccurrences() || LineFilterJson.getNumOccurrences())
    return "--stdin-filename cannot be combined with --diff-base or "
           "--line-filter: "
           "their lines are those of the file on disk";
  if (ExportFixes.getNumOccurrences())
    return "--stdin-filename cannot be combined with --export-fixes: the "
           "fixes' offsets are into standard input, not into the file on disk";
  return "";
}

/// --select and --ignore, as the configurations take them.
static CommandLineSelection commandLineSelection() {
  CommandLineSelection Selection;
  if (Select.getNumOccurrences())
    Selection.Select = std::vector<std::string>(Select.begin(), Select.end());
  Selection.Ignore.assign(Ignore.begin(), Ignore.end());
  return Selection;
}

/// --diff once took a git revision: a value, or a word after it that is no
/// file, is that older use, told before the options are parsed. Args: the
/// arguments after the program's name. Empty when there is none.
static std::string olderDiffUsage(ArrayRef<const char *> Args) {
  for (size_t I = 0; I < Args.size(); ++I) {
    StringRef Arg(Args[I]);
    if (Arg == "--")
      break;
    bool WithValue = Arg.starts_with("--diff=") || Arg.starts_with("-diff=");
    bool BeforeRevision = (Arg == "--diff" || Arg == "-diff") &&
                          I + 1 < Args.size() &&
                          !StringRef(Args[I + 1]).starts_with("-") &&
                          !sys::fs::exists(Args[I + 1]);
    if (WithValue || BeforeRevision)
      return "--diff previews the fixes as a unified diff (as ruff's --diff); "
             "to report only findings on lines changed since a git revision, "
             "use --diff-base=" +
             (WithValue ? Arg.split('=').second : StringRef(Args[I + 1]))
                 .str();
  }
  return "";
}

/// Why the options of ruff's names cannot run as given; empty when they can.
static std::string ruffOptionsUsageError() {
  std::vector<std::string> Selectors(Select.begin(), Select.end());
  Selectors.insert(Selectors.end(), Ignore.begin(), Ignore.end());
  if (std::vector<std::string> Unknown = unknownCheckSelectors(Selectors);
      !Unknown.empty()) {
    std::vector<std::string> Known(std::begin(checks::All),
                                   std::end(checks::All));
    return "--select/--ignore: '" + Unknown.front() +
           "' names no check and is no prefix of one (the checks are " +
           llvm::join(Known, ", ") + ")";
  }
  if (PreviewFixes && Fix)
    return "--diff previews the fixes and --fix writes them: give one";
  if (Format.getNumOccurrences() && LegacyFormat.getNumOccurrences())
    return "--format is the older name of --output-format: give one";
  return "";
}

/// The fix Python findings carry, from --fix-mode.
static PythonFixMode pythonFixMode() {
  switch (FixMode) {
  case FixModeKind::Broadcast:
    return PythonFixMode::Broadcast;
  case FixModeKind::OncePerBackward:
    return PythonFixMode::NoSync;
  case FixModeKind::Fuse:
    return PythonFixMode::None;
  }
  llvm_unreachable("every fix mode is handled");
}

/// What `ddpguard: fixed FILE` adds for a Python file.
static const char *pythonFixSummary() {
  return pythonFixMode() == PythonFixMode::NoSync
             ? " (the first forward runs inside no_sync(): buffers are "
               "broadcast once per step)"
             : " ('broadcast_buffers' set to false: each rank now keeps its "
               "own running statistics)";
}

/// --stdin-filename, as ruff takes it: checks the Python source on standard
/// input as the file StdinFilename; with --fix the fixed source goes to
/// standard output, the report to standard error, and no file is written.
static int checkStdin(const SarifOptions &Sarif,
                      std::optional<TorchVersion> TorchOverride) {
  SmallString<256> Path(StdinFilename);
  sys::fs::make_absolute(Path);
  sys::path::remove_dots(Path, /*remove_dot_dot=*/true);
  std::string File(Path);
  ErrorOr<std::unique_ptr<MemoryBuffer>> Input = MemoryBuffer::getSTDIN();
  if (!Input) {
    errs() << "ddpguard: error: cannot read standard input: "
           << Input.getError().message() << "\n";
    return 2;
  }
  StringRef Text = (*Input)->getBuffer();
  RuleSet PythonRules = RuleSet::builtin();
  for (const std::string &RuleFile : Rules)
    cantFail(PythonRules.addFile(RuleFile)); // Loaded without error in main.
  TorchVersionJudge Judge(TorchOverride, PythonInterpreter);
  RunReport Report;
  std::vector<FileProblem> &Errors = Report.Errors;
  PythonConfigs Configs;
  Configs.setCommandLineSelection(commandLineSelection());
  unsigned SyntaxErrors =
      checkPythonSource(File, Text, PythonRules, Judge, Configs,
                        pythonFixMode(), Report.Findings, Errors);
  for (FileProblem &P : Configs.takeErrors())
    Errors.push_back(std::move(P));
  LineTable Lines;
  Lines.provide(File, Text);
  FormatKind Kind = outputFormat(/*ChecksCpp=*/false);
  if (PreviewFixes) {
    unsigned Fixable = writeFixPreview(outs(), errs(), Report.Findings, Errors,
                                       std::pair(File, Text));
    printErrors(Errors);
    return !Errors.empty() ? 2 : Fixable && !ExitZero ? 1 : 0;
  }
  writeReport(Fix ? errs() : outs(), Report, Lines, Sarif, Kind);
  bool Clean = Report.Findings.empty();
  if (Fix) {
    std::string Output = Text.str();
    ContentStamps NothingOnDisk;
    FixWriter Writer(NothingOnDisk, "none");
    for (const ClangTidyError &F : Report.Findings)
      Writer.collect(F, Errors);
    Expected<std::string> Fixed = Writer.fixedText(File, Text);
    if (!Fixed) {
      Errors.push_back({File, "cannot fix: " + toString(Fixed.takeError())});
    } else if (*Fixed != Text) {
      // As for files: the fix may add no syntax error; findings left count.
      std::vector<Finding> Left;
      std::vector<FileProblem> Ignored;
      if (checkPythonSource(File, *Fixed, PythonRules, Judge, Configs,
                            pythonFixMode(), Left, Ignored) > SyntaxErrors) {
        Errors.push_back({File, "the fixed source has a syntax error; printed "
                                "unchanged"});
      } else {
        Output = std::move(*Fixed);
        Clean = Left.empty();
        errs() << "ddpguard: fixed " << File << pythonFixSummary() << "\n";
      }
    }
    outs() << Output;
  } else {
    writeRunSummary(outs(), Report, Kind, {});
  }
  printErrors(Errors);
  outs().flush();
  if (outs().has_error()) {
    errs() << "ddpguard: error: cannot write to standard output: "
           << outs().error().message() << "\n";
    outs().clear_error();
    return 2;
  }
  if (!Errors.empty())
    return 2;
  return Clean || ExitZero ? 0 : 1;
}

int main(int argc, const char **argv) {
  InitLLVM Init(argc, argv);
  std::string FixedError;
  std::unique_ptr<tooling::CompilationDatabase> Fixed =
      tooling::FixedCompilationDatabase::loadFromCommandLine(argc, argv,
                                                             FixedError);
  cl::HideUnrelatedOptions({&Category, &PythonCategory, &CppCategory});
  cl::SetVersionPrinter([](raw_ostream &OS) {
    OS << "ddpguard " << DDPGUARD_VERSION << "\n";
  });
  if (std::string Problem = olderDiffUsage(ArrayRef(argv + 1, argc - 1));
      !Problem.empty()) {
    errs() << "ddpguard: error: " << Problem << "\n";
    return 2;
  }
  std::string ParseErrors;
  raw_string_ostream ParseErrorStream(ParseErrors);
  if (!cl::ParseCommandLineOptions(
          argc, argv,
          "Finds the causes of PyTorch's \"modified by an inplace "
          "operation\" error in Python and C++ (LibTorch) code: several "
          "forwards on a DDP-wrapped module before one backward, an "
          "optimizer step or a parameter write between a forward and its "
          "backward, an in-place write on a value saved for backward.\n\n"
          "  ddpguard .                       the Python files and C++ "
          "sources under this folder\n"
          "  ddpguard -p build                every file of "
          "build/compile_commands.json\n"
          "\n"
          "Also installed by the Python package (pip): ddpguard-explain "
          "SCRIPT [ARGS...]\n"
          "runs a training script and explains autograd's \"modified by an "
          "inplace\noperation\" error; ddpguard-verify SCRIPT [ARGS...], one "
          "per rank under\ntorchrun --no-python, checks that the ranks agree "
          "bit for bit at every step.\nBoth need torch: pip install "
          "'ddpguard[explain]' or 'ddpguard[verify]'.\n",
          &ParseErrorStream)) {
    errs() << StringRef(ParseErrorStream.str()).rtrim() << "\n";
    return 2;
  }
  if (std::string Problem = ruffOptionsUsageError(); !Problem.empty()) {
    errs() << "ddpguard: error: " << Problem << "\n";
    return 2;
  }
  if (ListChecks) {
    writeCheckList(outs(), Format.getNumOccurrences() && Format == FormatKind::Json);
    return 0;
  }
  std::optional<TorchVersion> TorchOverride;
  if (TorchVersionOption.getNumOccurrences() &&
      !(TorchOverride = parseTorchVersion(TorchVersionOption))) {
    errs() << "ddpguard: error: --torch-version expects a version such as "
              "2.11.0 or 2.11.0+cu130, not '"
           << TorchVersionOption << "'\n";
    return 2;
  }
  if (StdinFilename.getNumOccurrences()) {
    if (std::string Problem = stdinUsageError(); !Problem.empty()) {
      errs() << "ddpguard: error: " << Problem << "\n";
      return 2;
    }
  }
  // What each path stands for (FolderWalk.h): a .py file, the Python files
  // and C++ sources under a folder, or a C++ file. A folder's C++ sources
  // need a compilation database; when there is none and the run has Python
  // files to check, they are skipped with one line that says why.
  std::vector<std::string> PythonPaths, CppPaths;
  std::vector<FileProblem> PathErrors;
  std::vector<std::pair<std::string, FolderContents>> Folders;
  PythonConfigs Configs;
  Configs.setCommandLineSelection(commandLineSelection());
  for (const std::string &Path : SourcePaths) {
    sys::fs::file_status Status;
    if (std::error_code EC = sys::fs::status(Path, Status)) {
      PathErrors.push_back({Path, EC == std::errc::no_such_file_or_directory
                                      ? "no such file or directory"
                                      : "cannot read: " + EC.message()});
      continue;
    }
    if (Status.type() == sys::fs::file_type::directory_file) {
      FolderContents Contents = walkFolder(Path, Configs, FollowLinks);
      for (const std::string &Line : Contents.Warnings)
        errs() << "ddpguard: warning: " << Line << "\n";
      for (const auto &[File, Why] : Contents.Skipped)
        errs() << "ddpguard: skipped " << workingPath(File) << ": " << Why
               << "\n";
      llvm::append_range(PythonPaths, Contents.PythonFiles);
      Folders.emplace_back(Path, std::move(Contents));
      continue;
    }
    if (isPythonFile(Path)) {
      if (!ForceExclude || !Configs.excludedWithFolders(Path))
        PythonPaths.push_back(Path);
      continue;
    }
    if (sys::path::extension(Path) == ".ipynb") {
      PathErrors.push_back(
          {Path, "is a Jupyter notebook, which ddpguard does not read: it "
                 "checks .py files and C++ sources ('jupyter nbconvert --to "
                 "script' writes a notebook's code to a .py file)"});
      continue;
    }
    if (Status.type() != sys::fs::file_type::regular_file) {
      PathErrors.push_back({Path, "not read: it is " +
                                      fileTypeWords(Status.type()) +
                                      ", not a regular file"});
      continue;
    }
    CppPaths.push_back(Path);
  }
  bool FromStdin = StdinFilename.getNumOccurrences() != 0;
  // Without files: every translation unit of the -p database.
  bool WholeRepository = SourcePaths.empty() && !FromStdin;
  if (WholeRepository && (Fixed || BuildPath.empty())) {
    errs() << "ddpguard: error: no files given: name the files or folders to "
              "check ('ddpguard .' checks the Python files and C++ sources "
              "under this folder), or give -p <build dir> alone to check "
              "every file its compile_commands.json lists\n";
    return 2;
  }
  // The C++ sources the folders hold; a database is searched from the first.
  std::vector<std::string> FolderSources;
  for (const auto &[Folder, Contents] : Folders)
    llvm::append_range(FolderSources, Contents.CppSources);
  bool AskedForCpp = Fixed || !BuildPath.empty();
  bool CheckCpp =
      WholeRepository || !CppPaths.empty() || (!Folders.empty() && AskedForCpp);
  std::string DatabaseStart = CppPaths.empty() ? "" : CppPaths.front();
  if (!CheckCpp && !FolderSources.empty()) {
    DatabaseStart = FolderSources.front();
    // Without Python files to check, the database a C++ source needs is
    // looked for, and its absence is an error, as for a file named here.
    CheckCpp =
        PythonPaths.empty() ||
        !databaseFileAbove(sys::path::parent_path(DatabaseStart)).empty();
    if (!CheckCpp) {
      std::vector<std::string> Named;
      for (size_t I = 0; I < FolderSources.size() && I < 3; ++I)
        Named.push_back(workingPath(FolderSources[I]));
      if (FolderSources.size() > 3)
        Named.push_back("and " + std::to_string(FolderSources.size() - 3) +
                        " more");
      bool One = FolderSources.size() == 1;
      errs() << "ddpguard: skipped "
             << (One ? Named.front()
                     : std::to_string(FolderSources.size()) + " C++ sources (" +
                           llvm::join(Named, ", ") + ")")
             << ": no compilation database (compile_commands.json or "
                "compile_flags.txt) in "
             << (One ? "its folder" : "their folders")
             << " or above; pass -p <build dir> or compile flags after '--' "
                "to check "
             << (One ? "it" : "them") << "\n";
    }
  }
  Expected<LoadedDatabase> Compilations =
      !CheckCpp ? noDatabase()
                : loadDatabase(std::move(Fixed), BuildPath, DatabaseStart);
  if (!Compilations) {
    errs() << "ddpguard: error: " << toString(Compilations.takeError())
           << "\n";
    return 2;
  }
  std::optional<LineFilter> Filter;
  if (DiffRev.getNumOccurrences() && LineFilterJson.getNumOccurrences()) {
    errs() << "ddpguard: error: --diff-base and --line-filter cannot be "
              "combined\n";
    return 2;
  }
  if (DiffRev.getNumOccurrences()) {
    if (DiffRev.empty() || StringRef(DiffRev).starts_with("-")) {
      errs() << "ddpguard: error: --diff-base needs a git revision\n";
      return 2;
    }
    Filter = LineFilter::fromGitDiff(DiffRev);
  } else if (LineFilterJson.getNumOccurrences()) {
    Expected<LineFilter> Parsed = LineFilter::fromJson(LineFilterJson);
    if (!Parsed) {
      errs() << "ddpguard: error: " << toString(Parsed.takeError()) << "\n";
      return 2;
    }
    Filter = std::move(*Parsed);
  }
  SarifOptions Sarif;
  if (SarifHelpUriBase.getNumOccurrences()) {
    // An absolute URI: a scheme (RFC 3986: a letter, then letters, digits,
    // '+', '-', '.'), a colon, and more.
    StringRef Base(SarifHelpUriBase);
    size_t Colon = Base.find(':');
    bool Absolute = Colon != StringRef::npos && Colon > 0 &&
                    Colon + 1 < Base.size() && isAlpha(Base[0]) &&
                    llvm::all_of(Base.take_front(Colon), [](char C) {
                      return isAlnum(C) || C == '+' || C == '-' || C == '.';
                    });
    if (!Absolute) {
      errs() << "ddpguard: error: --sarif-help-uri-base must be an absolute "
                "URI (such as https://example.org/docs/), not '"
             << Base << "'\n";
      return 2;
    }
    Sarif.HelpUriBase = Base.str();
  }
  for (const std::string &File : Rules) {
    RuleSet Check;
    if (Error Err = Check.addFile(File)) {
      errs() << "ddpguard: error: " << toString(std::move(Err)) << "\n";
      return 2;
    }
  }

  if (FromStdin)
    return checkStdin(Sarif, TorchOverride);

  auto Start = std::chrono::steady_clock::now();
  RunReport Report;
  std::vector<FileProblem> &Errors = Report.Errors;
  std::vector<Finding> &Findings = Report.Findings;
  std::vector<std::string> Files;
  llvm::append_range(Errors, PathErrors);
  std::vector<std::string> Requested = CppPaths;
  if (WholeRepository) {
    Requested = translationUnits(*Compilations->Exact);
    if (Requested.empty()) {
      errs() << "ddpguard: error: " << Compilations->Source
             << " lists no translation unit to check\n";
      return 2;
    }
  }
  // A folder stands for the C++ sources under it, as ruff and clang-format
  // take folders: with a compilation database its translation units there,
  // with flags after '--' the source files the walk found.
  for (const auto &[Folder, Contents] : Folders) {
    std::vector<std::string> Found;
    bool FromDatabase = CheckCpp && !Compilations->FromCommandLine;
    if (CheckCpp)
      Found = FromDatabase
                  ? unitsUnder(translationUnits(*Compilations->Exact), Folder)
                  : Contents.CppSources;
    if (Found.empty() && Contents.PythonFiles.empty() && !Contents.AnyExcluded)
      Errors.push_back(
          {Folder, FromDatabase
                       ? "is a directory with no Python file and no "
                         "translation unit of " +
                             Compilations->Source + " under it"
                       : "is a directory with no Python file or C++ source "
                         "under it"});
    llvm::append_range(Requested, Found);
  }
  // A file named twice, or named and found in a folder, is checked once.
  std::set<sys::fs::UniqueID> SeenFiles;
  for (const std::string &File : Requested) {
    sys::fs::file_status Status;
    if (std::error_code EC = sys::fs::status(File, Status)) {
      Errors.push_back({File, EC == std::errc::no_such_file_or_directory
                                  ? "no such file or directory"
                                  : "cannot read: " + EC.message()});
      continue;
    }
    if (!SeenFiles.insert(Status.getUniqueID()).second)
      continue;
    // .clang-tidy files are searched upwards from a normalised path.
    SmallString<256> Path(File);
    sys::fs::make_absolute(Path);
    sys::path::remove_dots(Path, /*remove_dot_dot=*/true);
    // Never a silent pass: a file without a compile command is an error.
    if (std::string Missing = Compilations->missingCommand(Path);
        !Missing.empty()) {
      Errors.push_back({std::string(Path), Missing});
      continue;
    }
    Files.push_back(std::string(Path));
  }
  const tooling::CompilationDatabase &Database = *Compilations->Database;
  ContentStamps Parsed;
  CheckPolicy Policy;
  // Compiler warnings are wanted from every file: then all are parsed.
  Policy.MaySkip = WholeRepository && !NoSkip && !ShowCompilerWarnings;
  Policy.Progress = WholeRepository && sys::Process::StandardErrIsDisplayed();
  std::vector<FileResult> Results = checkFiles(Files, Database, Parsed, Policy);
  std::vector<std::string> Unchecked;
  if (!Compilations->FromCommandLine) {
    std::set<std::string> Checked(Files.begin(), Files.end());
    for (const std::string &Unit : translationUnits(*Compilations->Exact))
      if (!Checked.count(Unit))
        Unchecked.push_back(Unit);
  }
  resolveAcrossFiles(Results, Unchecked);
  size_t SkippedFiles = 0;
  for (size_t I = 0; I < Files.size(); ++I)
    if (Results[I].Skipped) {
      ++SkippedFiles;
      if (ExplainSkips)
        errs() << "ddpguard: skipped " << workingPath(Files[I])
               << ": " << triggerDescription(Results[I].Triggers) << "\n";
    }

  // A header seen from several files is reported once; a warning one file
  // shows is not counted as suppressed for another.
  std::set<std::tuple<std::string, unsigned, std::string>> Seen;
  // A configuration shared by several files is reported once.
  std::set<std::pair<std::string, std::string>> ConfigSeen;
  bool ConfigBroken = false;
  for (FileResult &R : Results) {
    for (FileProblem &P : R.ConfigWarnings)
      if (ConfigSeen.insert({P.File, P.Message}).second)
        errs() << "ddpguard: warning: " << P.File << ": " << P.Message << "\n";
    for (FileProblem &P : R.ConfigErrors)
      if (ConfigSeen.insert({P.File, P.Message}).second) {
        Errors.push_back(std::move(P));
        ConfigBroken = true;
      }
  }
  for (FileResult &R : Results) {
    if (R.ParseError)
      Errors.push_back(*R.ParseError);
    for (Finding &F : R.Findings)
      if (Seen.insert({F.Message.FilePath, F.Message.FileOffset, F.Message.Message})
              .second)
        Findings.emplace_back(std::move(F));
    for (ClangTidyError &W : R.CompilerWarnings)
      if (Seen.insert({W.Message.FilePath, W.Message.FileOffset, W.Message.Message})
              .second)
        Report.CompilerWarnings.push_back(std::move(W));
  }
  std::set<std::tuple<std::string, unsigned, std::string>> Suppressed;
  for (FileResult &R : Results)
    for (ClangTidyError &S : R.Suppressed) {
      std::tuple<std::string, unsigned, std::string> Key{
          S.Message.FilePath, S.Message.FileOffset, S.Message.Message};
      if (!Seen.count(Key))
        Suppressed.insert(std::move(Key));
    }
  Report.SuppressedInHeaders = Suppressed.size();

  std::vector<std::string> PythonFiles;
  for (const std::string &File : PythonPaths) {
    sys::fs::UniqueID Id;
    if (!sys::fs::getUniqueID(File, Id) && !SeenFiles.insert(Id).second)
      continue;
    SmallString<256> Path(File);
    sys::fs::make_absolute(Path);
    sys::path::remove_dots(Path, /*remove_dot_dot=*/true);
    PythonFiles.push_back(std::string(Path));
  }
  RuleSet PythonRules = RuleSet::builtin();
  for (const std::string &File : Rules)
    cantFail(PythonRules.addFile(File)); // Loaded without error above.
  TorchVersionJudge Judge(TorchOverride, PythonInterpreter);
  PythonFixMode PythonFix = pythonFixMode();
  std::map<std::string, unsigned> PythonSyntaxErrors = checkPythonFiles(
      PythonFiles, PythonRules, Judge, Configs, PythonFix, Findings, Errors,
      Parsed);
  for (FileProblem &P : Configs.takeErrors()) {
    Errors.push_back(std::move(P));
    ConfigBroken = true;
  }

  // --diff-base, --line-filter: what is not on a selected line is not reported,
  // fixed or exported, and does not fail the run.
  auto Selected = [&](auto &Items, LineTable &Lines) {
    llvm::erase_if(Items, [&](const ClangTidyError &E) {
      return !Filter->passes(E, Lines, Errors);
    });
  };
  // --select, --ignore: the C++ findings' (the Python ones' were left out as
  // they were made, under their configurations).
  auto ChecksSelected = [&](auto &Items) {
    std::vector<std::string> Selectors(Select.begin(), Select.end());
    std::vector<std::string> Ignored(Ignore.begin(), Ignore.end());
    llvm::erase_if(Items, [&](const ClangTidyError &E) {
      return !checkSelected(E.DiagnosticName, Selectors, Ignored);
    });
  };
  ChecksSelected(Findings);
  if (Filter) {
    for (const std::string &File : Files)
      Filter->prepare(File, Errors);
    for (const std::string &File : PythonFiles)
      Filter->prepare(File, Errors);
    LineTable Lines;
    Selected(Findings, Lines);
    Selected(Report.CompilerWarnings, Lines);
  }

  if (!ExportFixes.empty()) {
    std::string Yaml;
    raw_string_ostream YamlStream(Yaml);
    exportReplacements(Files.empty() ? "" : Files.front(),
                       std::vector<ClangTidyError>(Findings.begin(),
                                                   Findings.end()),
                       YamlStream);
    if (Error Err = writeExport(ExportFixes, Yaml))
      Errors.push_back({ExportFixes, toString(std::move(Err))});
  }

  FormatKind Kind = outputFormat(CheckCpp);
  if (PreviewFixes) {
    unsigned Fixable = writeFixPreview(outs(), errs(), Findings, Errors);
    printErrors(Errors);
    return !Errors.empty() ? 2 : Fixable && !ExitZero ? 1 : 0;
  }
  // With --fix, the formats a person reads print what is left after it.
  bool ReportAfterFixes = Fix && ruffStyle(Kind);
  LineTable Lines;
  if (!ReportAfterFixes)
    writeReport(outs(), Report, Lines, Sarif, Kind);
  std::vector<std::string> FixedFindings;
  // What --fix left, when it wrote fixes.
  std::optional<std::vector<Finding>> Remaining;

  bool Clean = Findings.empty();
  // Fixes made under a configuration that was not the one meant are wrong.
  if (Fix && !Findings.empty() && ConfigBroken)
    errs() << "ddpguard: --fix not applied: the configuration has errors\n";
  else if (Fix && !Findings.empty()) {
    if (!RunBeforeWritingFixes.empty())
      sys::ExecuteAndWait("/bin/sh", {"/bin/sh", "-c", RunBeforeWritingFixes});
    FixWriter Writer(Parsed, FormatStyle);
    for (const ClangTidyError &F : Findings)
      Writer.collect(F, Errors);
    // Their places before the fixes move them.
    for (const Finding &F : Findings)
      Lines.position(F.Message.FilePath, F.Message.FileOffset);
    std::vector<std::string> Written = Writer.write(Errors);
    if (!Written.empty()) {
      // Every fixed file must still compile, and nothing may be left.
      ContentStamps Rechecked;
      CheckPolicy Quiet = Policy;
      Quiet.Progress = false;
      std::vector<FileResult> Again =
          checkFiles(Files, Database, Rechecked, Quiet);
      resolveAcrossFiles(Again, Unchecked);
      // Python files: a fix may add no syntax error; findings left count.
      std::vector<Finding> PythonLeft;
      std::vector<FileProblem> PythonProblems;
      for (const auto &[File, Count] :
           checkPythonFiles(PythonFiles, PythonRules, Judge, Configs, PythonFix,
                            PythonLeft, PythonProblems, Rechecked))
        if (Count > PythonSyntaxErrors[File]) {
          FileResult Broken;
          Broken.ParseError = FileProblem{File, "has a syntax error"};
          Again.push_back(std::move(Broken));
        }
      bool Broken = llvm::any_of(Again, [](const FileResult &R) {
        return R.ParseError.has_value();
      });
      bool ParsedBefore = llvm::none_of(Results, [](const FileResult &R) {
        return R.ParseError.has_value();
      });
      if (Broken && ParsedBefore) {
        for (const std::string &File : Written)
          Writer.restore(File, Errors);
        for (const FileResult &R : Again)
          if (R.ParseError)
            Errors.push_back({R.ParseError->File,
                              "the fixed file " + R.ParseError->Message +
                                  "; original restored"});
        Written.clear();
      } else {
        // What is left counts as before: on the selected lines only.
        if (Filter)
          Filter->forget();
        LineTable LinesAfter;
        Clean = llvm::all_of(Again, [&](FileResult &R) {
          if (Filter)
            Selected(R.Findings, LinesAfter);
          ChecksSelected(R.Findings);
          return R.Findings.empty();
        });
        if (Filter)
          Selected(PythonLeft, LinesAfter);
        Clean = Clean && PythonLeft.empty();
        if (ReportAfterFixes) {
          FixedFindings = fixedFindingLines(Findings, Written, Lines);
          // What is left, each once (a header's from each file including it).
          std::set<std::tuple<std::string, unsigned, std::string>> Left;
          Remaining.emplace();
          for (FileResult &R : Again)
            for (Finding &F : R.Findings)
              if (Left.insert({F.Message.FilePath, F.Message.FileOffset,
                               F.Message.Message})
                      .second)
                Remaining->emplace_back(std::move(F));
          llvm::append_range(*Remaining, PythonLeft);
        }
      }
    }
    // An unsafe fix (the broadcast fix, the only one) changes behaviour; the
    // summary says so.
    std::set<std::string> BroadcastFixed;
    std::string BroadcastNote;
    for (const Finding &F : Findings)
      if (const tooling::DiagnosticMessage *Note = fixEffectNote(F);
          Note && F.Applicability == FixApplicability::Unsafe) {
        BroadcastNote = Note->Message;
        for (const auto &Entry : F.Message.Fix)
          BroadcastFixed.insert(resolvedPath(Entry.getKey()));
      }
    bool SaidBroadcast = false;
    for (const std::string &File : Written) {
      errs() << "ddpguard: fixed " << File;
      if (BroadcastFixed.count(File)) {
        errs() << " ('broadcast_buffers' set to false: each rank now keeps "
                  "its own running statistics)";
        SaidBroadcast = true;
      } else if (isPythonFile(File) &&
                 pythonFixMode() == PythonFixMode::NoSync) {
        errs() << pythonFixSummary();
      }
      errs() << "\n";
    }
    if (SaidBroadcast)
      errs() << "ddpguard: note: " << BroadcastNote << "\n";
  }
  if (Remaining)
    Findings = std::move(*Remaining);
  if (ReportAfterFixes) {
    LineTable LinesAfter;
    writeReport(outs(), Report, LinesAfter, Sarif, Kind);
  }
  writeRunSummary(outs(), Report, Kind, FixedFindings);

  if (Report.SuppressedInHeaders)
    errs() << "Suppressed " << Report.SuppressedInHeaders << " warning"
           << (Report.SuppressedInHeaders == 1 ? "" : "s")
           << " in headers (use --header-filter)\n";
  printErrors(Errors);
  if (WholeRepository) {
    double Seconds = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - Start)
                         .count();
    errs() << "ddpguard: " << Requested.size() << " file"
           << (Requested.size() == 1 ? "" : "s") << ": "
           << Files.size() - SkippedFiles << " checked, " << SkippedFiles
           << " skipped as irrelevant";
    if (Files.size() != Requested.size())
      errs() << ", " << Requested.size() - Files.size() << " not checkable";
    errs() << "; " << Findings.size() << " finding"
           << (Findings.size() == 1 ? "" : "s") << "; "
           << format("%.1f", Seconds) << " s\n";
  }
  // A report that did not reach its reader is no pass.
  outs().flush();
  if (outs().has_error()) {
    errs() << "ddpguard: error: cannot write the report to standard output: "
           << outs().error().message() << "\n";
    outs().clear_error();
    return 2;
  }
  if (!Errors.empty())
    return 2;
  return Clean || ExitZero ? 0 : 1;
}
