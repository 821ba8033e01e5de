//===- Database.cpp -------------------------------------------------------===//

#include "Database.h"
#include "clang/Tooling/JSONCompilationDatabase.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Regex.h"
#include "llvm/Support/VirtualFileSystem.h"
#include <set>

using namespace clang;
using namespace llvm;

namespace ddpguard {
namespace {

/// Adds clang's resource directory, so that <stddef.h> and friends resolve
/// wherever ddpguard is installed.
class ResourceDirDatabase : public tooling::CompilationDatabase {
public:
  explicit ResourceDirDatabase(std::unique_ptr<CompilationDatabase> Base)
      : Base(std::move(Base)) {}
  std::vector<tooling::CompileCommand>
  getCompileCommands(StringRef File) const override {
    return adjust(Base->getCompileCommands(File));
  }
  std::vector<std::string> getAllFiles() const override {
    return Base->getAllFiles();
  }
  std::vector<tooling::CompileCommand> getAllCompileCommands() const override {
    return adjust(Base->getAllCompileCommands());
  }

private:
  static std::vector<tooling::CompileCommand>
  adjust(std::vector<tooling::CompileCommand> Commands) {
    for (tooling::CompileCommand &Command : Commands) {
      bool HasResourceDir = llvm::any_of(Command.CommandLine, [](StringRef A) {
        return A.starts_with("-resource-dir");
      });
      if (Command.CommandLine.empty())
        continue;
      if (!HasResourceDir)
        Command.CommandLine.insert(Command.CommandLine.begin() + 1,
                                   "-resource-dir=" DDPGUARD_CLANG_RESOURCE_DIR);
      // Without carets the front end does not print its own "N warnings
      // generated." line; the warnings themselves reach us as diagnostics.
      Command.CommandLine.insert(Command.CommandLine.begin() + 1,
                                 "-fno-caret-diagnostics");
    }
    return Commands;
  }
  std::unique_ptr<CompilationDatabase> Base;
};

/// "path:line:column: message" for a JSON syntax error; llvm::json reports
/// "[line:column, byte=N]: message".
std::string jsonSyntaxError(StringRef Path, Error Err) {
  std::string Message = toString(std::move(Err));
  SmallVector<StringRef, 4> Parts;
  if (Regex("^\\[([0-9]+):([0-9]+), byte=[0-9]+\\]: (.*)$").match(Message, &Parts))
    return (Path + ":" + Parts[1] + ":" + Parts[2] + ": not valid JSON: " +
            Parts[3])
        .str();
  return (Path + ": not valid JSON: " + Message).str();
}

/// Loads compile_commands.json as clang's JSON plugin does, with the same
/// adjustments, but reports a syntax error with its place.
Expected<std::unique_ptr<tooling::CompilationDatabase>>
loadJson(StringRef Path) {
  ErrorOr<std::unique_ptr<MemoryBuffer>> Buffer = MemoryBuffer::getFile(Path);
  if (!Buffer)
    return createStringError(Buffer.getError(), "%s: cannot read: %s",
                             Path.str().c_str(),
                             Buffer.getError().message().c_str());
  if (Expected<json::Value> Parsed = json::parse((*Buffer)->getBuffer());
      !Parsed)
    return createStringError(inconvertibleErrorCode(),
                             jsonSyntaxError(Path, Parsed.takeError()));
  std::string Error;
  std::unique_ptr<tooling::CompilationDatabase> Database =
      tooling::JSONCompilationDatabase::loadFromFile(
          Path, Error, tooling::JSONCommandLineSyntax::AutoDetect);
  if (!Database)
    return createStringError(inconvertibleErrorCode(),
                             "%s: not a compilation database: %s",
                             Path.str().c_str(), StringRef(Error).trim().str().c_str());
  return tooling::inferTargetAndDriverMode(tooling::inferToolLocation(
      tooling::expandResponseFiles(std::move(Database),
                                   vfs::getRealFileSystem())));
}

/// The first compile_commands.json or compile_flags.txt from Start upwards,
/// or null when there is none.
Expected<std::unique_ptr<tooling::CompilationDatabase>>
findDatabase(StringRef Start, std::string &Source) {
  std::string Found = databaseFileAbove(Start);
  if (Found.empty())
    return nullptr;
  Source = Found;
  if (sys::path::filename(Found) == "compile_commands.json")
    return loadJson(Found);
  std::string Error;
  auto Database = tooling::FixedCompilationDatabase::loadFromFile(Found, Error);
  if (!Database)
    return createStringError(inconvertibleErrorCode(), "%s: %s", Found.c_str(),
                             Error.c_str());
  return std::unique_ptr<tooling::CompilationDatabase>(std::move(Database));
}

bool isHeader(StringRef File) {
  StringRef Extension = sys::path::extension(File);
  return llvm::is_contained(
      std::initializer_list<StringRef>{"", ".h", ".hh", ".hpp", ".hxx", ".h++",
                                       ".inc", ".inl", ".ipp", ".tcc"},
      Extension);
}

} // namespace

std::string databaseFileAbove(StringRef Start) {
  SmallString<256> Directory(Start);
  sys::fs::make_absolute(Directory);
  sys::path::remove_dots(Directory, /*remove_dot_dot=*/true);
  for (StringRef Dir = Directory; !Dir.empty();
       Dir = sys::path::parent_path(Dir))
    for (StringRef Name : {"compile_commands.json", "compile_flags.txt"}) {
      SmallString<256> Path(Dir);
      sys::path::append(Path, Name);
      if (sys::fs::exists(Path))
        return std::string(Path);
    }
  return "";
}

std::string LoadedDatabase::missingCommand(StringRef File) const {
  if (FromCommandLine || !Exact->getCompileCommands(File).empty() ||
      (isHeader(File) && !Database->getCompileCommands(File).empty()))
    return "";
  return "not in the compilation database " + Source +
         ", so it cannot be checked: add it to the build (CMake: to a "
         "target's sources) and regenerate the database, or pass its "
         "compile flags after '--'";
}

std::vector<std::string>
translationUnits(const tooling::CompilationDatabase &Database) {
  std::set<std::string> Units;
  for (const tooling::CompileCommand &Command :
       Database.getAllCompileCommands()) {
    SmallString<256> Path(Command.Filename);
    if (!sys::path::is_absolute(Path)) {
      SmallString<256> Absolute(Command.Directory);
      sys::path::append(Absolute, Path);
      Path = Absolute;
    }
    sys::fs::make_absolute(Path);
    sys::path::remove_dots(Path, /*remove_dot_dot=*/true);
    if (!isHeader(Path))
      Units.insert(std::string(Path));
  }
  return {Units.begin(), Units.end()};
}

Expected<LoadedDatabase>
loadDatabase(std::unique_ptr<tooling::CompilationDatabase> Fixed,
             StringRef BuildPath, StringRef FirstFile) {
  LoadedDatabase Result;
  std::unique_ptr<tooling::CompilationDatabase> Exact;
  if (Fixed) {
    Result.FromCommandLine = true;
    Result.Source = "the flags after '--'";
    Exact = std::move(Fixed);
  } else {
    SmallString<256> Start(BuildPath);
    if (BuildPath.empty()) {
      Start = FirstFile;
      sys::fs::make_absolute(Start);
      sys::path::remove_filename(Start);
    }
    auto Found = findDatabase(Start, Result.Source);
    if (!Found)
      return Found.takeError();
    if (!*Found) {
      std::string Hint =
          "\nddpguard: pass -p <build dir> holding compile_commands.json "
          "(CMake: -DCMAKE_EXPORT_COMPILE_COMMANDS=ON), or compile flags "
          "after '--'";
      if (!BuildPath.empty())
        return createStringError(inconvertibleErrorCode(),
                                 "no compile_commands.json in '%s' or its "
                                 "parents%s",
                                 BuildPath.str().c_str(), Hint.c_str());
      return createStringError(inconvertibleErrorCode(),
                               "no compilation database found for '%s' or its "
                               "parent directories%s",
                               FirstFile.str().c_str(), Hint.c_str());
    }
    Exact = std::move(*Found);
  }
  Result.Exact = Exact.get();
  Result.Database = std::make_unique<ResourceDirDatabase>(
      Result.FromCommandLine
          ? std::move(Exact)
          : tooling::inferMissingCompileCommands(std::move(Exact)));
  return Result;
}

} // namespace ddpguard
