//===- RuffOutput.h - The report as ruff prints its own -------------------===//
//
// What a Python user expects from a linter, after ruff: findings sorted by
// file, line and column with paths relative to the working directory; one
// line per finding (--output-format=concise) with the notes every finding
// repeats said once per run; GitHub Actions annotations; --statistics; and
// a summary line ("Found 2 problems (1 fixable with --fix)." or "All checks
// passed!").
//
//===----------------------------------------------------------------------===//

#ifndef DDPGUARD_TOOLS_RUFFOUTPUT_H
#define DDPGUARD_TOOLS_RUFFOUTPUT_H

#include "Report.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/raw_ostream.h"
#include <string>
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

} // namespace ddpguard

#endif
