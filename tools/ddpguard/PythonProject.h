//===- PythonProject.h - The project around the checked Python files ------===//
//
// Checking train.py alone must give the findings checking its folder gives:
// the model class, the factory or the helper it uses is often in another
// file of its project. The project of a file is the nearest folder above it
// that holds pyproject.toml, setup.cfg, setup.py or .git (else the file's
// folder); its source roots are that folder and its src/, as ruff's `src`
// defaults to. A check reads, besides the files asked for, the project's
// files that they import (transitively) and those that import them (whose
// calls bind the parameters of their helpers), as context: nothing is
// reported in those.
//
//===----------------------------------------------------------------------===//

#ifndef DDPGUARD_TOOLS_PYTHONPROJECT_H
#define DDPGUARD_TOOLS_PYTHONPROJECT_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/MemoryBuffer.h"
#include <memory>
#include <string>
#include <vector>

namespace ddpguard {

struct ContextFile {
  std::string Path;
  std::unique_ptr<llvm::MemoryBuffer> Text;
};

struct PythonProject {
  /// The source roots of each checked file's project, by file.
  std::vector<std::vector<std::string>> SourceRoots;
  /// The other files read, with their own source roots.
  std::vector<ContextFile> Context;
  std::vector<std::vector<std::string>> ContextRoots;
};

/// The project around Files (absolute paths, with their texts: an editor's
/// buffer may not be on disk yet).
PythonProject
readPythonProject(llvm::ArrayRef<std::pair<std::string, llvm::StringRef>> Files);

/// The modules a Python text imports, as it spells them: "pkg.models",
/// "..nets", and for `from pkg import a` also "pkg.a" (a may be a module).
std::vector<std::string> importedModules(llvm::StringRef Text);

} // namespace ddpguard

#endif
