//===- LineFilter.h - Report only findings on selected lines --------------===//
//
// --line-filter (clang-tidy's JSON) and --diff-base=<rev> (the lines git reports
// as changed since <rev>): a finding is reported when its warning or one of
// its notes (the other forward, the backward, the construction) lies on a
// selected line.
//
//===----------------------------------------------------------------------===//

#ifndef DDPGUARD_TOOLS_LINEFILTER_H
#define DDPGUARD_TOOLS_LINEFILTER_H

#include "Report.h"
#include "clang-tidy/ClangTidyOptions.h"
#include "llvm/Support/Error.h"
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ddpguard {

class LineFilter {
public:
  /// clang-tidy's --line-filter: [{"name":"file.cpp","lines":[[1,3]]},...];
  /// a name matches the end of a path, the first entry that matches decides,
  /// an entry without "lines" selects the whole file, and a file no entry
  /// matches is left out (an empty list selects everything).
  static llvm::Expected<LineFilter> fromJson(llvm::StringRef Json);
  /// The lines `git diff -U0 <Rev> -- <file>` reports as added or changed,
  /// git run in the file's directory; a file git does not track is new, so
  /// all of it is selected.
  static LineFilter fromGitDiff(std::string Rev);

  /// Whether F's warning or one of its notes is on a selected line. A file
  /// whose changed lines git cannot tell is reported in Errors once, and its
  /// findings are kept.
  bool passes(const clang::tidy::ClangTidyError &F, LineTable &Lines,
              std::vector<FileProblem> &Errors);
  /// Computes a file's changed lines now (--diff-base), so that a revision git
  /// does not know is an error even where nothing is found.
  void prepare(const std::string &File, std::vector<FileProblem> &Errors);
  /// Forgets what git said: the files have changed (--fix wrote them).
  void forget() { Changed.clear(); }

private:
  using Ranges = std::vector<std::pair<unsigned, unsigned>>;
  /// The selected lines of a file: All for a new file, Failed when git could
  /// not tell (then every line counts).
  struct FileLines {
    bool All = false;
    bool Failed = false;
    Ranges Lines;
  };
  const FileLines &changedLines(const std::string &File,
                                std::vector<FileProblem> &Errors);
  bool selected(const std::string &File, unsigned Line,
                std::vector<FileProblem> &Errors);

  std::optional<std::string> Rev;
  clang::tidy::ClangTidyGlobalOptions Json;
  std::map<std::string, FileLines> Changed;
};

} // namespace ddpguard

#endif
