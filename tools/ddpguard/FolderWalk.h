//===- FolderWalk.h - The files a folder on the command line stands for ---===//
//
// `ddpguard .` walks the folder as ruff walks one:
//   - each real folder once (by device and inode), so that a link back up
//     neither repeats findings nor loops;
//   - links to folders are not followed unless --follow-links is given (as
//     ruff and git do not follow them); links to files are;
//   - only regular files are read: a FIFO or a link to /dev/zero named
//     train.py is skipped with a warning, never opened to read;
//   - what the .ignore files, and in a git repository the .gitignore files
//     and .git/info/exclude, ignore is left out (IgnoreRules.h);
//   - hidden folders, __pycache__, virtual environments (a folder holding
//     pyvenv.cfg) and the folders ruff's default exclude names (build, dist,
//     node_modules, venv, _build, buck-out, site-packages, __pypackages__)
//     are not entered; [tool.ddpguard]'s exclude leaves out more.
// The folder itself and the files named on the command line are always
// taken. A folder that cannot be read is a warning, not silence.
//
//===----------------------------------------------------------------------===//

#ifndef DDPGUARD_TOOLS_FOLDERWALK_H
#define DDPGUARD_TOOLS_FOLDERWALK_H

#include "PythonConfig.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include <string>
#include <utility>
#include <vector>

namespace ddpguard {

/// A C++ translation unit by its extension (headers are not).
bool isCppSourceFile(llvm::StringRef Path);

struct FolderContents {
  /// Absolute paths, sorted.
  std::vector<std::string> PythonFiles, CppSources;
  /// Whether [tool.ddpguard]'s exclude left something out.
  bool AnyExcluded = false;
  /// Files not read, and why ("it is a FIFO, not a regular file").
  std::vector<std::pair<std::string, std::string>> Skipped;
  /// What could not be read, one line each ("PATH: why").
  std::vector<std::string> Warnings;
};

/// "a FIFO", "a socket", ... for what is no regular file.
std::string fileTypeWords(llvm::sys::fs::file_type Type);

/// Whether a walk does not enter a folder of this name, whatever the
/// configuration says.
bool skippedFolderName(llvm::StringRef Name);

/// The Python files and C++ sources under Folder.
FolderContents walkFolder(llvm::StringRef Folder, PythonConfigs &Configs,
                          bool FollowLinks);

} // namespace ddpguard

#endif
