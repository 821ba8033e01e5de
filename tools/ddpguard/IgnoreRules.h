//===- IgnoreRules.h - .gitignore and .ignore, as ruff reads them ---------===//
//
// ruff walks folders with the `ignore` crate (ripgrep's): it leaves out what
// the .ignore files, and inside a git repository the .gitignore files and
// .git/info/exclude, ignore (gitignore(5) patterns). A deeper file wins over
// a shallower one, a .ignore over a .gitignore, and within a file the last
// pattern that matches decides; a negated pattern (`!keep.py`) takes a path
// back.
//
// A matcher of our own rather than a library: Debian 12's one candidate,
// libgit2-dev 1.5.1, answers only for a path inside a repository it opens
// (git_ignore_path_is_ignored), reads no .ignore files, and depends on
// libmbedtls, libssh2, libhttp-parser and libpcre2 (apt-cache depends),
// which the static CLI would then link, where it needs only libc, libm,
// zlib and zstd (tools/ddpguard/CMakeLists.txt).
//
// Globs are matched one path component at a time, and within a component
// with one backtracking point per `*`, so that no pattern in a hostile
// .gitignore makes the time grow faster than the product of the lengths.
//
//===----------------------------------------------------------------------===//

#ifndef DDPGUARD_TOOLS_IGNORERULES_H
#define DDPGUARD_TOOLS_IGNORERULES_H

#include "llvm/ADT/StringRef.h"
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ddpguard {

/// Whether Text matches Glob as git matches a gitignore pattern with a slash:
/// `*`, `?` and `[...]` stay within a component, `**` as a whole component
/// matches any number of them (at the end, at least one).
bool matchesIgnoreGlob(llvm::StringRef Glob, llvm::StringRef Text);

/// The patterns of one ignore file, relative to its folder.
class IgnoreFile {
public:
  /// Base: the absolute folder the patterns are relative to.
  IgnoreFile(std::string Base, llvm::StringRef Text);
  /// true: Path (absolute, under Base) is ignored; false: a negated pattern
  /// takes it back; nullopt: no pattern matches.
  std::optional<bool> decide(llvm::StringRef Path, bool IsFolder) const;

private:
  struct Pattern {
    std::string Glob;
    bool Negated = false;
    bool FolderOnly = false;
    /// Holds a slash: matched against the path from Base, not the name.
    bool Anchored = false;
  };
  std::string Base;
  std::vector<Pattern> Patterns;
};

/// The ignore files that apply in one folder of a walk, shared with the
/// folders below it, which add their own.
class IgnoreRules {
public:
  /// The rules a walk starting at Root (absolute) inherits from the folders
  /// above it. Warnings: ignore files that cannot be read.
  static IgnoreRules above(llvm::StringRef Root,
                           std::vector<std::string> &Warnings);
  /// These rules with the ignore files Folder holds added; Folder holding
  /// .git starts a repository there.
  IgnoreRules in(llvm::StringRef Folder,
                 std::vector<std::string> &Warnings) const;
  bool ignored(llvm::StringRef Path, bool IsFolder) const;

private:
  void addFilesOf(llvm::StringRef Folder, bool ReadIgnore, bool ReadGit,
                  std::vector<std::string> &Warnings);
  using Files = std::vector<std::shared_ptr<const IgnoreFile>>;
  /// Each deepest last: .ignore files; .gitignore files and
  /// .git/info/exclude (first) of the repository.
  Files Ignore, Git;
  bool InRepository = false;
};

} // namespace ddpguard

#endif
