//===- PythonFiles.h - The CLI's Python files -----------------------------===//
//
// `ddpguard train.py src/`: .py files need no compilation database. Each is
// checked by the Python frontend (lib/PythonFrontend/), judged by the torch
// version of --torch-version, else of the interpreter --python names, else
// of the project's pins (requirements*.txt, pyproject.toml, lock files,
// searched upwards from the file), else the oldest supported one. Findings
// become the same ClangTidyErrors the C++ check makes, so every output
// format, --diff and the exit status treat them alike; a `# noqa` comment on
// the warning's line (bare, or naming the check) suppresses one.
//
//===----------------------------------------------------------------------===//

#ifndef DDPGUARD_TOOLS_PYTHONFILES_H
#define DDPGUARD_TOOLS_PYTHONFILES_H

#include "FixWriter.h"
#include "Report.h"
#include "Rules/RuleSet.h"
#include "llvm/ADT/StringRef.h"
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ddpguard {

bool isPythonFile(llvm::StringRef Path);

/// The .py files under Dir, sorted; hidden folders and virtual environments
/// (a folder holding pyvenv.cfg) are skipped, as ruff skips them.
std::vector<std::string> pythonFilesUnder(llvm::StringRef Dir);

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
  JudgedTorch judge(llvm::StringRef File, std::optional<FileProblem> &Problem);

private:
  std::optional<TorchVersion> Override;
  std::string Python;
  std::optional<JudgedTorch> FromPython;
  bool PythonAsked = false;
};

/// Checks Text, the source of File (an absolute path; read from standard
/// input under --stdin-filename), and appends its findings, each with the
/// broadcast fix, and its problems. Returns the number of syntax errors.
unsigned checkPythonSource(const std::string &File, llvm::StringRef Text,
                           const RuleSet &Rules, TorchVersionJudge &Judge,
                           std::vector<clang::tidy::ClangTidyError> &Findings,
                           std::vector<FileProblem> &Errors);

/// Checks each of Files (absolute paths) and appends its findings, each
/// with the broadcast fix (the keyword set to False at the construction),
/// and the problems that kept a file from being checked; records what each
/// file held in Read, so that --fix writes only over that. Returns the
/// number of syntax errors per file.
std::map<std::string, unsigned> checkPythonFiles(const std::vector<std::string> &Files,
                          const RuleSet &Rules, TorchVersionJudge &Judge,
                          std::vector<clang::tidy::ClangTidyError> &Findings,
                          std::vector<FileProblem> &Errors,
                          ContentStamps &Read);

} // namespace ddpguard

#endif
