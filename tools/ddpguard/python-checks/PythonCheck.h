//===- PythonCheck.h - one Python check's findings, as the CLI's ----------===//
//
// Each Python check turns its findings of python::CheckResult into the CLI's
// Findings (message, notes with their NoteKind, fix, FixTitle and
// Applicability) in its own file here, <Title>.cpp, which defines
// render<Title>; lib/PythonFrontend/PythonChecks.def lists them, and
// checkPythonTexts (PythonFiles.cpp) calls each for each file of a run, in
// the list's order.
//
//===----------------------------------------------------------------------===//

#ifndef DDPGUARD_TOOLS_PYTHON_CHECKS_PYTHONCHECK_H
#define DDPGUARD_TOOLS_PYTHON_CHECKS_PYTHONCHECK_H

#include "../PythonFiles.h"
#include "PythonFrontend/PythonFrontend.h"
#include "Tidy/CheckNames.h"

namespace ddpguard {

/// One checked file, as every Python check's renderer reads it.
struct PythonCheckContext {
  const std::string &File;
  llvm::StringRef Text;
  /// The torch version the file is judged by, for the judged-by note.
  const JudgedTorch &Judged;
  const RuleSet &Rules;
  PythonConfigs &Configs;
  PythonFixMode FixMode;
  const python::CheckResult &Result;
  /// Where the renderer appends its findings.
  std::vector<Finding> &Findings;
};

/// A diagnostic's text at Offset of File.
clang::tooling::DiagnosticMessage message(const std::string &Text,
                                          const std::string &File,
                                          unsigned Offset);

/// Whether the line holding Offset carries a noqa comment for Check, as
/// flake8 and ruff read one: `#`, any spaces, `noqa` in any case; bare it
/// suppresses every check, with `:` and codes (commas or spaces between
/// them, any case) only those.
bool suppressed(llvm::StringRef Text, unsigned Offset, llvm::StringRef Check);

/// Whether a finding of Check at Offset is reported: the file's
/// configuration selects Check and no noqa comment suppresses it.
inline bool reported(const PythonCheckContext &C, llvm::StringRef Check,
                     unsigned Offset) {
  return C.Configs.reports(C.File, Check) &&
         !suppressed(C.Text, Offset, Check);
}

namespace python_checks {
#define DDPGUARD_PYTHON_CHECK(Title)                                           \
  void render##Title(const PythonCheckContext &C);
#include "PythonFrontend/PythonChecks.def"
} // namespace python_checks

} // namespace ddpguard

#endif
