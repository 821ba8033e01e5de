//===- FixWriter.h - Safe, checked application of fixes -------------------===//

#ifndef DDPGUARD_TOOLS_FIXWRITER_H
#define DDPGUARD_TOOLS_FIXWRITER_H

#include "Report.h"
#include "clang/Tooling/Core/Replacement.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/VirtualFileSystem.h"
#include <map>
#include <mutex>

namespace ddpguard {

/// What a file held when the check read it: its size and a hash of its
/// bytes. A fix is written only over exactly that content.
struct ContentStamp {
  uint64_t Size = 0;
  uint64_t Hash = 0;
  bool operator==(const ContentStamp &Other) const {
    return Size == Other.Size && Hash == Other.Hash;
  }
  static ContentStamp of(llvm::StringRef Contents);
};

/// The stamps of every file the front end read, by real path (links
/// resolved). Thread-safe: the files are checked in parallel.
class ContentStamps {
public:
  void record(llvm::StringRef RealPath, ContentStamp Stamp);
  /// The stamp of a file, or nothing when it was not read or was read with
  /// different contents by different translation units.
  std::optional<ContentStamp> lookup(llvm::StringRef RealPath) const;

private:
  mutable std::mutex Lock;
  std::map<std::string, std::optional<ContentStamp>, std::less<>> Stamps;
};

/// A file system that records the stamp of each file the front end reads.
llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem>
recordingFileSystem(llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> Base,
                    ContentStamps &Stamps);

/// Path with symbolic links resolved, or Path itself when it cannot be.
std::string resolvedPath(llvm::StringRef Path);

class FixWriter {
public:
  /// Parsed holds the stamps of what the check read; FormatStyle is a
  /// clang-format style ("file", "llvm", ...; "none" leaves fixes as they
  /// are).
  FixWriter(const ContentStamps &Parsed, std::string FormatStyle)
      : Parsed(Parsed), FormatStyle(std::move(FormatStyle)) {}

  /// Adds a finding's fixes; a fix that overlaps one already taken is dropped
  /// and reported. Files are keyed by their real path, so a fix reached
  /// through a link and through its target is applied once.
  void collect(const clang::tidy::ClangTidyError &Finding,
               std::vector<FileProblem> &Errors);
  /// Writes every fixed file (see writeContents). Returns the real paths of
  /// the files written; a file that is read-only or whose contents are no
  /// longer what was checked is reported and left intact.
  std::vector<std::string> write(std::vector<FileProblem> &Errors);
  /// The collected fixes of File applied to Text, its source, written
  /// nowhere (a Python source read from standard input, so unformatted).
  llvm::Expected<std::string> fixedText(llvm::StringRef File,
                                        llvm::StringRef Text) const;
  /// The real paths of the files the collected fixes edit, sorted.
  std::vector<std::string> fixedFiles() const;
  /// Puts back the contents a file had before write().
  bool restore(const std::string &File, std::vector<FileProblem> &Errors);

private:
  const ContentStamps &Parsed;
  std::string FormatStyle;
  std::map<std::string, clang::tooling::Replacements> Fixes;
  std::map<std::string, std::string> Originals;
  std::map<std::string, ContentStamp> WrittenStamps;
};

/// Replaces the contents of File, which must not be a link (pass a resolved
/// path), keeping its permissions, owner and group and its hard links.
llvm::Error writeContents(llvm::StringRef File, llvm::StringRef Contents);

} // namespace ddpguard

#endif
