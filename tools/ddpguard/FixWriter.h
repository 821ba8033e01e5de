//===- FixWriter.h - Atomic, checked application of fixes -----------------===//

#ifndef DDPGUARD_TOOLS_FIXWRITER_H
#define DDPGUARD_TOOLS_FIXWRITER_H

#include "Report.h"
#include "clang/Tooling/Core/Replacement.h"
#include "llvm/Support/FileSystem.h"
#include <map>

namespace ddpguard {

class FixWriter {
public:
  /// Files modified after RunStart are treated as changed since they were read.
  explicit FixWriter(llvm::sys::TimePoint<> RunStart) : RunStart(RunStart) {}

  /// Adds a finding's fixes; a fix that overlaps one already taken is dropped
  /// and reported.
  void collect(const clang::tidy::ClangTidyError &Finding,
               std::vector<FileProblem> &Errors);
  /// Writes every fixed file through a temporary and a rename. Returns the
  /// files written; a file that is read-only or changed on disk is reported
  /// and left intact.
  std::vector<std::string> write(std::vector<FileProblem> &Errors);
  /// Puts back the contents a file had before write().
  bool restore(const std::string &File, std::vector<FileProblem> &Errors);

private:
  llvm::sys::TimePoint<> RunStart;
  std::map<std::string, clang::tooling::Replacements> Fixes;
  std::map<std::string, std::string> Originals;
};

/// Replaces File's contents atomically, keeping its permissions.
llvm::Error writeAtomically(llvm::StringRef File, llvm::StringRef Contents);

} // namespace ddpguard

#endif
