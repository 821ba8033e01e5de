//===- Report.h - Findings as text, JSON, SARIF or rdjsonl ----------------===//

#ifndef DDPGUARD_TOOLS_REPORT_H
#define DDPGUARD_TOOLS_REPORT_H

#include "clang-tidy/ClangTidyDiagnosticConsumer.h"
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

/// What a note of a finding tells, carried as data so that no reader parses
/// its text (the output formats, the language server through JSON).
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

/// The name of a kind in JSON ("judged-by").
llvm::StringRef noteKindName(NoteKind Kind);

/// A finding of ddpguard's checks: clang-tidy's error with a kind per note.
struct Finding : clang::tidy::ClangTidyError {
  explicit Finding(clang::tidy::ClangTidyError Error)
      : ClangTidyError(std::move(Error)) {}
  /// The kind of each note, in the order of Notes; a note past its end (one
  /// of the C++ check's, which reach here as clang-tidy's text) is a Place.
  std::vector<NoteKind> NoteKinds;
  /// What the fix of the warning does, in a few words, as ruff's fix titles
  /// ("Set broadcast_buffers=False at the DDP construction"); empty when
  /// there is no fix or none was given (the C++ check's).
  std::string FixTitle;
  NoteKind kindOf(size_t Note) const {
    return Note < NoteKinds.size() ? NoteKinds[Note] : NoteKind::Place;
  }
  void addNote(clang::tooling::DiagnosticMessage Note, NoteKind Kind);
};

/// The note that says the fix on F's warning sets broadcast_buffers to
/// false, and what that changes; null when the warning carries no such fix.
const clang::tooling::DiagnosticMessage *
broadcastFixNote(const clang::tidy::ClangTidyError &F);

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
std::string findingFingerprint(const clang::tidy::ClangTidyError &F,
                               LineTable &Lines);

} // namespace ddpguard

#endif
