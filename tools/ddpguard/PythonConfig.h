//===- PythonConfig.h - The configuration of a Python project -------------===//
//
// As ruff reads its own: each .py file's settings are those of the nearest
// configuration file above it, a `.ddpguard` (TOML, the keys at the top) or
// a pyproject.toml with a [tool.ddpguard] table (one without it is passed
// over); a `.ddpguard` wins over the pyproject.toml of its folder. Keys:
//
//   torch-version = "2.13.0"           the torch the files are judged by
//                                      (--torch-version and --python win;
//                                      "2.11.0+cu130" as torch prints it)
//   exclude = ["generated", "legacy/*.py"]
//                                      globs of files and folders not
//                                      entered when a folder is walked (a
//                                      file named on the command line is
//                                      still checked, as in ruff)
//   assume-modules-have-buffers = true a wrapped module the checker cannot
//                                      follow is assumed to have buffers
//                                      (the finding says so); false: such a
//                                      construction is not reported
//   extend-exclude = ["build"]        more exclude globs (ruff's name; both
//                                      lists apply)
//   select = ["ddp-"]                  the checks reported: names or
//                                      prefixes of names, as ruff's select
//                                      (default: every check)
//   ignore = ["ddp-multiple-forward-before-backward"]
//                                      checks not reported (names or
//                                      prefixes); the longer entry of select
//                                      and ignore wins, ignore a tie
//   [tool.ddpguard.per-file-ignores]
//   "tests/*.py" = ["inplace-"]       checks not reported in the files a
//                                      glob matches (as exclude matches)
//
// --select on the command line replaces select and ignore; --ignore adds
// to ignore; per-file-ignores apply always, as in ruff.
//
// An unknown key, a value of the wrong kind or a file that is no TOML is an
// error with its line; the keys that are right still apply.
//
//===----------------------------------------------------------------------===//

#ifndef DDPGUARD_TOOLS_PYTHONCONFIG_H
#define DDPGUARD_TOOLS_PYTHONCONFIG_H

#include "Report.h"
#include "Rules/RuleSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/GlobPattern.h"
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ddpguard {

/// A torch version as torch.__version__ prints it: "2.11.0", "2.13", or
/// with a local label (PEP 440), "2.11.0+cu130", which changes nothing here.
std::optional<TorchVersion> parseTorchVersion(llvm::StringRef Text);

struct PythonConfig {
  /// The file the settings come from; empty: none was found (defaults).
  std::string Path;
  std::optional<TorchVersion> Torch;
  /// "[tool.ddpguard] in pyproject.toml": where the version note points.
  std::string Origin;
  /// An exclude pattern, as ruff matches one: against a path's last
  /// component, and, joined to the configuration's folder, against the
  /// whole path.
  /// A GlobPattern refers to its text: each stays where it was made.
  struct Exclusion {
    std::string NameText, AnchoredText;
    llvm::GlobPattern Name, Anchored;
  };
  std::vector<std::unique_ptr<Exclusion>> Exclude;
  bool AssumeModulesHaveBuffers = true;
  /// Empty: every check.
  std::vector<std::string> Select;
  std::vector<std::string> Ignore;
  struct PerFileIgnore {
    std::unique_ptr<Exclusion> Files;
    std::vector<std::string> Checks;
  };
  std::vector<PerFileIgnore> PerFileIgnores;

  /// Whether File (an absolute path) matches the glob, as exclude matches.
  static bool matches(const Exclusion &Glob, llvm::StringRef File);
};

/// Whether a finding of Check is reported under --select and --ignore (or
/// the select and ignore of a configuration), as ruff reads them: each entry
/// is a check name or a prefix of one ("ddp-" selects every check; "ALL"
/// too). An empty Select selects every check; the longest matching entry of
/// the two lists wins, and Ignore wins a tie.
bool checkSelected(llvm::StringRef Check, llvm::ArrayRef<std::string> Select,
                   llvm::ArrayRef<std::string> Ignore);

/// The entries of a --select or --ignore list that name no check and are no
/// prefix of one: each an error.
std::vector<std::string>
unknownCheckSelectors(llvm::ArrayRef<std::string> Selectors);

/// --select (when given) and --ignore.
struct CommandLineSelection {
  std::optional<std::vector<std::string>> Select;
  std::vector<std::string> Ignore;
};

/// The configurations of the files of one run, each file read once.
class PythonConfigs {
public:
  /// The settings of the .py file File (an absolute path).
  const PythonConfig &forFile(llvm::StringRef File);
  /// Whether Path (a file or folder met while walking a folder) matches an
  /// exclude pattern of the configuration of the folder holding it.
  bool excluded(llvm::StringRef Path);
  /// Whether File or a folder above it, up to its configuration's folder,
  /// is excluded: --force-exclude's test for the files named on the
  /// command line, as pre-commit names them.
  bool excludedWithFolders(llvm::StringRef File);
  /// Whether a finding of Check in File (an absolute path) is reported,
  /// under File's configuration and the command line's selection.
  bool reports(llvm::StringRef File, llvm::StringRef Check);
  void setCommandLineSelection(CommandLineSelection Selection) {
    CommandLine = std::move(Selection);
  }
  /// The errors of the configuration files read so far, each once; those
  /// returned before are not returned again.
  std::vector<FileProblem> takeErrors();

private:
  const PythonConfig &forFolder(llvm::StringRef Folder);
  /// The configuration Folder itself holds, if any.
  std::optional<PythonConfig> readIn(llvm::StringRef Folder);

  const PythonConfig Defaults;
  CommandLineSelection CommandLine;
  /// By folder: the configuration that governs it.
  llvm::StringMap<const PythonConfig *> ByFolder;
  /// By configuration file, each read once.
  std::map<std::string, std::unique_ptr<PythonConfig>> Read;
  std::vector<FileProblem> Errors;
};

} // namespace ddpguard

#endif
