//===- PythonFiles.h - The CLI's Python files -----------------------------===//
//
// `ddpguard train.py src/`: .py files need no compilation database. Each is
// checked by the Python frontend (lib/PythonFrontend/), judged by the torch
// version of --torch-version, else of the interpreter --python names, else
// the torch-version of its configuration (PythonConfig.h), else of the
// project's pins (requirements*.txt, pyproject.toml, lock files, searched
// upwards from the file), else the oldest supported one. Findings
// become the same ClangTidyErrors the C++ check makes, so every output
// format, --diff-base and the exit status treat them alike; a `# noqa` comment on
// the warning's line (bare, or naming the check) suppresses one.
//
//===----------------------------------------------------------------------===//

#ifndef DDPGUARD_TOOLS_PYTHONFILES_H
#define DDPGUARD_TOOLS_PYTHONFILES_H

#include "FixWriter.h"
#include "PythonConfig.h"
#include "Report.h"
#include "Rules/RuleSet.h"
#include "llvm/ADT/StringRef.h"
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ddpguard {

bool isPythonFile(llvm::StringRef Path);

/// The torch version a file is judged by, and where it came from.
struct JudgedTorch {
  TorchVersion Version = OldestSupportedTorch;
  /// "torch 2.11.0, from requirements.txt", for the note.
  std::string Description;
};

class TorchVersionJudge {
public:
  /// Override: --torch-version. Python: --python (empty: not given).
  TorchVersionJudge(std::optional<TorchVersion> Override, std::string Python)
      : Override(Override), Python(std::move(Python)) {}

  /// Errors (an interpreter that does not run or has no torch) are returned
  /// once, in Problem.
  JudgedTorch judge(llvm::StringRef File, const PythonConfig &Config,
                    std::optional<FileProblem> &Problem);

private:
  std::optional<TorchVersion> Override;
  std::string Python;
  std::optional<JudgedTorch> FromPython;
  bool PythonAsked = false;
};

/// The fix Python findings carry (--fix-mode): the broadcast keyword set to
/// False at the construction (broadcast); the first forward run inside
/// `with model.no_sync():` (once-per-backward: each step still starts from
/// rank 0's buffers); none (fuse, C++ only).
enum class PythonFixMode { Broadcast, NoSync, None };

/// Checks each of Files (absolute paths), together (a name one imports from
/// another is followed there), each under its configuration (the
/// configuration files' errors stay in Configs), and appends its findings,
/// each with the fix of FixMode or the note saying why it is withheld, and
/// the problems that kept a file from being checked; records what each file
/// held in Read, so that --fix writes only over that. Returns the number of
/// syntax errors per file.
std::map<std::string, unsigned>
checkPythonFiles(const std::vector<std::string> &Files, const RuleSet &Rules,
                 TorchVersionJudge &Judge, PythonConfigs &Configs,
                 PythonFixMode FixMode,
                 std::vector<Finding> &Findings,
                 std::vector<FileProblem> &Errors, ContentStamps &Read);

/// Checks Text, the source of File (an absolute path; read from standard
/// input under --stdin-filename), on its own, as checkPythonFiles does.
/// Returns the number of syntax errors.
unsigned checkPythonSource(const std::string &File, llvm::StringRef Text,
                           const RuleSet &Rules, TorchVersionJudge &Judge,
                           PythonConfigs &Configs, PythonFixMode FixMode,
                           std::vector<Finding> &Findings,
                           std::vector<FileProblem> &Errors);

} // namespace ddpguard

#endif
