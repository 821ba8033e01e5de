//===- FindingRecord.cpp --------------------------------------------------===//

#include "FindingRecord.h"
#include "clang/Basic/SourceManager.h"

using namespace clang;

namespace ddpguard {

namespace {
/// The records of the translation unit this thread is checking, if kept.
thread_local std::vector<FindingRecord> *CurrentRecords = nullptr;
} // namespace

RecordScope::RecordScope(std::vector<FindingRecord> &Into) {
  CurrentRecords = &Into;
}
RecordScope::~RecordScope() { CurrentRecords = nullptr; }

namespace tidy {

RecordedPlace RecordingCheck::placeOf(SourceLocation Loc) const {
  // clang-tidy's errors are at the file location, as the renderer puts them.
  if (!RecordSM || Loc.isInvalid())
    return {};
  SourceLocation FileLoc = RecordSM->getFileLoc(Loc);
  return {RecordSM->getFilename(FileLoc).str(),
          RecordSM->getFileOffset(FileLoc)};
}

DiagnosticBuilder RecordingCheck::warning(SourceLocation Loc,
                                          llvm::StringRef Text) {
  if (CurrentRecords)
    CurrentRecords->push_back({CheckName, placeOf(Loc), {}, {}, {}});
  return diag(Loc, Text);
}

DiagnosticBuilder RecordingCheck::note(SourceLocation Loc, llvm::StringRef Text,
                                       NoteKind Kind, NoteRole Role) {
  if (CurrentRecords && !CurrentRecords->empty())
    CurrentRecords->back().Notes.push_back({placeOf(Loc), Kind, Role});
  return diag(Loc, Text, DiagnosticIDs::Note);
}

void RecordingCheck::recordFix(FixApplicability Applicability,
                               std::string Title) {
  if (CurrentRecords && !CurrentRecords->empty()) {
    CurrentRecords->back().Applicability = Applicability;
    CurrentRecords->back().FixTitle = std::move(Title);
  }
}

} // namespace tidy
} // namespace ddpguard
