//===- Report.h - Findings as text, JSON, SARIF or rdjsonl ----------------===//

#ifndef DDPGUARD_TOOLS_REPORT_H
#define DDPGUARD_TOOLS_REPORT_H

#include "Tidy/FindingRecord.h"
#include "clang-tidy/ClangTidyDiagnosticConsumer.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/raw_ostream.h"
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ddpguard {

/// Line and column (both 1-based) of byte offsets in files, read once.
class LineTable {
public:
  std::pair<unsigned, unsigned> position(const std::string &File,
                                         unsigned Offset);
  /// The contents of File, as read for position().
  llvm::StringRef text(const std::string &File);
  /// Line (1-based) of File without its line break; empty past the end.
  llvm::StringRef lineText(const std::string &File, unsigned Line);
  /// Use Text as the contents of File instead of reading it from disk (a
  /// source read from standard input).
  void provide(const std::string &File, llvm::StringRef Text);

private:
  struct FileLines {
    std::string Text;
    std::vector<unsigned> Starts;
    void assign(std::string Contents);
  };
  FileLines &load(const std::string &File);
  std::map<std::string, FileLines> Files;
};

/// A file that could not be checked, and why.
struct FileProblem {
  std::string File;
  std::string Message;
  /// Where in File, when the problem has a place (a syntax error).
  std::optional<unsigned> Offset = std::nullopt;
};

/// The name of a kind in JSON ("judged-by").
llvm::StringRef noteKindName(NoteKind Kind);

/// The name of an applicability in JSON ("safe"); empty for None.
llvm::StringRef applicabilityName(FixApplicability Applicability);

/// A finding of ddpguard's checks: clang-tidy's error with what its notes
/// and its fix are, as data (FindingRecord.h).
struct Finding : clang::tidy::ClangTidyError {
  explicit Finding(clang::tidy::ClangTidyError Error)
      : ClangTidyError(std::move(Error)) {}
  /// The kind and role of each note, in the order of Notes; a note past
  /// their end (one the renderer adds, a macro's expansion) is a Place.
  std::vector<NoteKind> NoteKinds;
  std::vector<NoteRole> NoteRoles;
  /// What the fix of the warning does, in a few words, as ruff's fix titles
  /// ("Set broadcast_buffers=False at the DDP construction"); empty when
  /// there is no fix.
  std::string FixTitle;
  FixApplicability Applicability = FixApplicability::None;
  NoteKind kindOf(size_t Note) const {
    return Note < NoteKinds.size() ? NoteKinds[Note] : NoteKind::Place;
  }
  NoteRole roleOf(size_t Note) const {
    return Note < NoteRoles.size() ? NoteRoles[Note] : NoteRole::None;
  }
  void addNote(clang::tooling::DiagnosticMessage Note, NoteKind Kind,
               NoteRole Role = NoteRole::None);
  void insertNote(size_t At, clang::tooling::DiagnosticMessage Note,
                  NoteKind Kind, NoteRole Role = NoteRole::None);
  void eraseNote(size_t At);
  /// Takes the kinds, roles and fix of Record, the check's record of this
  /// warning (its notes matched by place, in order; Path names a file as
  /// both name it).
  void apply(const FindingRecord &Record,
             llvm::function_ref<std::string(llvm::StringRef)> Path);
};

/// The note that says what the fix on F's warning does and changes; null
/// when the warning carries no fix or no such note.
const clang::tooling::DiagnosticMessage *fixEffectNote(const Finding &F);

/// The table of checks (Tidy/CheckNames.h): a line per check, or as JSON an
/// array of objects (name, summary, explanation, fixAvailability,
/// fixApplicability, doc).
void writeCheckList(llvm::raw_ostream &OS, bool Json);

/// The percent-encoded file:// URI of a path (RFC 3986, RFC 8089).
std::string fileUri(llvm::StringRef Path);

/// Everything one run reports.
struct RunReport {
  /// The checks' warnings, each once.
  std::vector<Finding> Findings;
  /// The compiler's own warnings (--show-compiler-warnings), each once.
  std::vector<clang::tidy::ClangTidyError> CompilerWarnings;
  std::vector<FileProblem> Errors;
  /// Warnings in headers the header filter left out, each counted once.
  unsigned SuppressedInHeaders = 0;
};

void writeText(llvm::raw_ostream &OS, const RunReport &Report,
               LineTable &Lines);
void writeJson(llvm::raw_ostream &OS, const RunReport &Report,
               LineTable &Lines);
struct SarifOptions {
  /// --sarif-help-uri-base: each rule's helpUri is this followed by the rule
  /// id; no helpUri when empty.
  std::string HelpUriBase;
};

void writeSarif(llvm::raw_ostream &OS, const RunReport &Report,
                LineTable &Lines, const SarifOptions &Options);
/// SARIF with the default options (the same type as writeText and
/// writeJson, for callers that take them all as function pointers).
void writeSarif(llvm::raw_ostream &OS, const RunReport &Report,
                LineTable &Lines);
/// reviewdog's Diagnostic Format as JSON lines (rdjsonl): one diagnostic a
/// line, paths relative to the working directory.
void writeRdjsonl(llvm::raw_ostream &OS, const RunReport &Report,
                  LineTable &Lines);

/// Path relative to the working directory when it lies below it, else the
/// absolute path: what reviewdog and the SARIF fingerprints use.
std::string workingPath(llvm::StringRef Path);

/// The name of the function whose body holds Offset in the C++ source Text
/// (qualified as written: 'Trainer::step'), lambdas and statements skipped;
/// empty at namespace scope. Found with Clang's raw lexer, so comments and
/// literals are skipped, but from the text alone: a stable label, not a
/// semantic one.
std::string enclosingFunction(llvm::StringRef Text, unsigned Offset);

/// SARIF partialFingerprints["ddpguardHash/v1"] of a finding, without the
/// ':n' occurrence suffix: SHA-256 of the rule id, workingPath of the file,
/// the enclosing function's name and the whitespace-normalised text of the
/// forward lines (the warning's and the earlier forward's), so that it
/// survives edits elsewhere in the file and changes with the flagged code.
std::string findingFingerprint(const Finding &F, LineTable &Lines);

} // namespace ddpguard

#endif
