//===- Database.h - Where the compile commands come from ------------------===//
//
// The flags after '--', or a compilation database found from -p <dir> or
// from the first file upwards. Unlike clang's auto-detection, a
// compile_commands.json that cannot be parsed is an error naming the file and
// the place, not a reason to look further up; and a file the database does
// not list is an error, not a file silently skipped.
//
//===----------------------------------------------------------------------===//

#ifndef DDPGUARD_TOOLS_DATABASE_H
#define DDPGUARD_TOOLS_DATABASE_H

#include "clang/Tooling/CompilationDatabase.h"
#include "llvm/Support/Error.h"
#include <memory>
#include <string>
#include <vector>

namespace ddpguard {

struct LoadedDatabase {
  /// What to run with: the database, with commands inferred for headers it
  /// does not list, and clang's resource directory added.
  std::unique_ptr<clang::tooling::CompilationDatabase> Database;
  /// The database as loaded, without inference; owned by Database.
  const clang::tooling::CompilationDatabase *Exact = nullptr;
  /// The database's file, or a description of where the flags come from.
  std::string Source;
  /// Flags given after '--' apply to every file.
  bool FromCommandLine = false;

  /// Why File cannot be checked with this database, or the empty string: a
  /// source file needs its own entry; a header gets one inferred from a
  /// neighbour, as clangd does.
  std::string missingCommand(llvm::StringRef File) const;
};

/// The compile_commands.json or compile_flags.txt nearest above Start (a
/// folder), in its own folder first; empty when there is none.
std::string databaseFileAbove(llvm::StringRef Start);

/// Loads the compile commands: Fixed (the flags after '--') when given, else
/// the database in BuildPath or its parents, else the one above FirstFile.
/// The error names the database file and, for a JSON syntax error, the line
/// and column.
llvm::Expected<LoadedDatabase>
loadDatabase(std::unique_ptr<clang::tooling::CompilationDatabase> Fixed,
             llvm::StringRef BuildPath, llvm::StringRef FirstFile);

/// The translation units Database lists, for checking a whole repository:
/// absolute, each once, in order, headers (by extension: a header is not a
/// translation unit) left out.
std::vector<std::string>
translationUnits(const clang::tooling::CompilationDatabase &Database);

} // namespace ddpguard

#endif
