//===- FindingRecord.h - What a finding's notes and fix are, as data ------===//
//
// clang-tidy carries a warning and its notes as text. The ddpguard CLI needs
// more of each finding: what each note tells, whether the fix is safe, which
// note is the earlier forward. The checks write that here, beside each
// diagnostic, so that no reader parses the text. Only while a RecordScope is
// open on the thread (the CLI's) are records kept; clang-tidy, the plugin and
// clangd see the diagnostics alone, unchanged.
//
//===----------------------------------------------------------------------===//

#ifndef DDPGUARD_TIDY_FINDINGRECORD_H
#define DDPGUARD_TIDY_FINDINGRECORD_H

#include "clang-tidy/ClangTidyCheck.h"
#include <string>
#include <vector>

namespace ddpguard {

/// What a note of a finding tells (the output formats, the language server
/// through JSON).
enum class NoteKind {
  /// A place in the finding's story: a forward, the backward, a construction.
  Place,
  /// Which torch version the file was judged by.
  JudgedBy,
  /// That the finding holds on every supported torch.
  EveryTorch,
  /// What the checker assumed.
  Assumption,
  /// What the offered fix does and changes.
  FixEffect,
  /// Why no fix is offered.
  NoFix,
  /// Another fix, or a torch upgrade, that also removes the finding.
  Alternative,
};

/// The notes the CLI itself reads or replaces, whatever their kind.
enum class NoteRole {
  None,
  /// The earlier forward (or loop) whose saved values are overwritten: part
  /// of the SARIF fingerprint.
  EarlierForward,
  /// Why a DDP parameter's callers were not all followed; the CLI replaces
  /// it when it follows them in other files.
  CallersNotFollowed,
  /// That the construction fix is withheld because the construction is not
  /// visible; the CLI replaces it when it finds the construction.
  ConstructionNotVisible,
};

/// Ruff's fix applicability: a safe fix keeps the program's meaning, an
/// unsafe one changes behaviour (setting broadcast_buffers to false).
enum class FixApplicability { None, Safe, Unsafe };

/// A diagnostic's place as clang-tidy's errors give it: the file as the
/// source manager names it and the byte offset of its file location.
struct RecordedPlace {
  std::string File;
  unsigned Offset = 0;
};

struct NoteRecord {
  RecordedPlace At;
  NoteKind Kind = NoteKind::Place;
  NoteRole Role = NoteRole::None;
};

/// One warning of a check: its place, each of its notes in order, and its
/// fix.
struct FindingRecord {
  std::string Check;
  RecordedPlace At;
  std::vector<NoteRecord> Notes;
  FixApplicability Applicability = FixApplicability::None;
  /// What the warning's fix does, as ruff's fix titles.
  std::string FixTitle;
};

/// Keeps the records of the checks that run on this thread for its scope.
class RecordScope {
public:
  explicit RecordScope(std::vector<FindingRecord> &Into);
  ~RecordScope();
};

namespace tidy {

/// A check whose warnings and notes are recorded as they are emitted.
class RecordingCheck : public clang::tidy::ClangTidyCheck {
public:
  RecordingCheck(llvm::StringRef Name, clang::tidy::ClangTidyContext *Context)
      : ClangTidyCheck(Name, Context), CheckName(Name.str()) {}

protected:
  /// The source manager that places are read with; set before reporting.
  void recordWith(const clang::SourceManager &SM) { RecordSM = &SM; }
  clang::DiagnosticBuilder warning(clang::SourceLocation Loc,
                                   llvm::StringRef Text);
  clang::DiagnosticBuilder note(clang::SourceLocation Loc, llvm::StringRef Text,
                                NoteKind Kind = NoteKind::Place,
                                NoteRole Role = NoteRole::None);
  /// The last warning's fix.
  void recordFix(FixApplicability Applicability, std::string Title);

private:
  RecordedPlace placeOf(clang::SourceLocation Loc) const;
  std::string CheckName;
  const clang::SourceManager *RecordSM = nullptr;
};

} // namespace tidy
} // namespace ddpguard

#endif
