//===- UnifiedDiff.h - A unified diff of a fixed file ---------------------===//
//
// `ddpguard --diff` previews the fixes as ruff's --diff does: a unified diff
// per file (three lines of context, as diff -u and git diff print), that
// `patch -p0` or `git apply` take, and nothing is written.
//
//===----------------------------------------------------------------------===//

#ifndef DDPGUARD_TOOLS_UNIFIEDDIFF_H
#define DDPGUARD_TOOLS_UNIFIEDDIFF_H

#include "llvm/ADT/StringRef.h"
#include <string>

namespace ddpguard {

/// The unified diff from Before to After, both the contents of Path (as the
/// header names it); empty when they are equal.
std::string unifiedDiff(llvm::StringRef Path, llvm::StringRef Before,
                        llvm::StringRef After);

} // namespace ddpguard

#endif
