//===- Report.h - Findings as text, JSON or SARIF -------------------------===//

#ifndef DDPGUARD_TOOLS_REPORT_H
#define DDPGUARD_TOOLS_REPORT_H

#include "clang-tidy/ClangTidyDiagnosticConsumer.h"
#include "llvm/Support/raw_ostream.h"
#include <map>
#include <string>
#include <vector>

namespace ddpguard {

/// Line and column (both 1-based) of byte offsets in files, read once.
class LineTable {
public:
  std::pair<unsigned, unsigned> position(const std::string &File,
                                         unsigned Offset);

private:
  std::map<std::string, std::vector<unsigned>> LineStarts;
};

/// A file that could not be checked, and why.
struct FileProblem {
  std::string File;
  std::string Message;
};

/// The note that says the fix on F's warning sets broadcast_buffers to
/// false, and what that changes; null when the warning carries no such fix.
const clang::tooling::DiagnosticMessage *
broadcastFixNote(const clang::tidy::ClangTidyError &F);

/// The percent-encoded file:// URI of a path (RFC 3986, RFC 8089).
std::string fileUri(llvm::StringRef Path);

/// Everything one run reports.
struct RunReport {
  /// The check's warnings, each once.
  std::vector<clang::tidy::ClangTidyError> Findings;
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
void writeSarif(llvm::raw_ostream &OS, const RunReport &Report,
                LineTable &Lines);

} // namespace ddpguard

#endif
