//===- RuffOutput.h - The report as ruff prints its own -------------------===//
//
// What a Python user expects from a linter, after ruff: findings sorted by
// file, line and column with paths relative to the working directory; one
// line per finding (--output-format=concise) with the notes every finding
// repeats said once per run; GitHub Actions annotations; --statistics;
// --diff's preview of the fixes and --show-fixes' list of those made; and a
// summary line ("Found 2 problems (1 fixable with --fix)." or "All checks
// passed!").
//
//===----------------------------------------------------------------------===//

#ifndef DDPGUARD_TOOLS_RUFFOUTPUT_H
#define DDPGUARD_TOOLS_RUFFOUTPUT_H

#include "Report.h"
#include "llvm/Support/raw_ostream.h"
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ddpguard {

/// Orders findings and compiler warnings by file (as printed), line, column,
/// then check name.
void sortReport(RunReport &Report, LineTable &Lines);

/// Whether a note of this kind says the same in every finding of a run (the
/// torch judged by, what holds on every torch): said once per run by the
/// concise format.
bool repeatsInEveryFinding(NoteKind Kind);

/// One line per finding, "path:line:col: check [*] message" ([*]: --fix
/// fixes it), with ShowFixEffects the fix's title and the notes on what it
/// changes below it, then each note that repeats in every finding once.
void writeConcise(llvm::raw_ostream &OS, const RunReport &Report,
                  LineTable &Lines, bool ShowFixEffects);

/// GitHub Actions workflow commands: one "::warning file=...,line=...,
/// col=...,title=...::message" per finding, and "::error" per problem.
void writeGithub(llvm::raw_ostream &OS, const RunReport &Report,
                 LineTable &Lines);

/// --statistics: per check, the number of findings and of those --fix fixes,
/// most frequent first.
void writeStatistics(llvm::raw_ostream &OS, const RunReport &Report);

/// The last line: "All checks passed!" or "Found N problems (M fixable with
/// --fix)."; FixedCount > 0 adds a first line, "Fixed N problems.".
void writeSummary(llvm::raw_ostream &OS, const RunReport &Report,
                  unsigned FixedCount);

/// "path:line:col: check message" of each finding whose fix edits only files
/// in Written (real paths), placed in Before (the text the findings were
/// made from): what --fix fixed, for --show-fixes.
std::vector<std::string>
fixedFindingLines(const std::vector<Finding> &Findings,
                  const std::vector<std::string> &Written, LineTable &Before);

/// --diff: the fixes of Findings as a unified diff on Diff, and "Would fix N
/// problems." on Summary; nothing is written. Stdin, when given, is a file's
/// name and its source read from standard input. Returns the number of
/// findings with a fix.
unsigned writeFixPreview(
    llvm::raw_ostream &Diff, llvm::raw_ostream &Summary,
    const std::vector<Finding> &Findings, std::vector<FileProblem> &Errors,
    std::optional<std::pair<std::string, llvm::StringRef>> Stdin =
        std::nullopt);

} // namespace ddpguard

#endif
