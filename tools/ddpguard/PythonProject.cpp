//===- PythonProject.cpp - The project around the checked Python files ----===//

#include "PythonProject.h"
#include "FolderWalk.h"
#include "RegularFile.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include <map>
#include <set>

using llvm::StringRef;
namespace fs = llvm::sys::fs;
namespace path = llvm::sys::path;

namespace ddpguard {

// Imports are read by a scan of the lines, not a parse: the scan reads every
// file of a project to find those that import the checked one, and is about
// a hundred times cheaper than tree-sitter's parse. A line it misreads (an
// import inside a string) can only add a file to the context.
std::vector<std::string> importedModules(StringRef Text) {
  std::vector<std::string> Modules;
  auto Name = [](StringRef Part) {
    Part = Part.split('#').first.split(';').first.trim(" \t\r()\\");
    return Part.split(" as ").first.trim();
  };
  while (!Text.empty()) {
    auto [Line, Rest] = Text.split('\n');
    Text = Rest;
    Line = Line.ltrim(" \t");
    if (Line.consume_front("import ")) {
      llvm::SmallVector<StringRef, 4> Parts;
      Line.split(Parts, ',');
      for (StringRef Part : Parts)
        if (StringRef Module = Name(Part); !Module.empty())
          Modules.push_back(Module.str());
    } else if (Line.consume_front("from ")) {
      auto [Module, Names] = Line.split(" import");
      Module = Module.trim();
      if (Module.empty())
        continue;
      Modules.push_back(Module.str());
      llvm::SmallVector<StringRef, 4> Parts;
      Names.split(Parts, ',');
      for (StringRef Part : Parts)
        if (StringRef Imported = Name(Part);
            !Imported.empty() && Imported != "*")
          Modules.push_back(
              (Module + (Module.ends_with(".") ? "" : ".") + Imported).str());
    }
  }
  return Modules;
}

namespace {

/// Files in the order they were found, each once.
using FileList =
    llvm::SetVector<std::string, std::vector<std::string>, std::set<std::string>>;

/// The nearest folder above File that holds a project's marker, else the
/// current folder when File is under it (as ruff falls back to it, and as
/// `python -m` puts it first on sys.path), else File's folder.
std::string projectRoot(StringRef File) {
  for (StringRef Dir = path::parent_path(File); !Dir.empty();
       Dir = path::parent_path(Dir)) {
    for (const char *Marker : {"pyproject.toml", "setup.cfg", "setup.py", ".git"})
      if (fs::exists(Dir + "/" + Marker))
        return Dir.str();
    if (path::parent_path(Dir) == Dir)
      break;
  }
  llvm::SmallString<256> Current;
  if (!fs::current_path(Current) && Current.size() > 1 &&
      File.starts_with((Current + "/").str()))
    return Current.str().str();
  return path::parent_path(File).str();
}

std::vector<std::string> sourceRoots(const std::string &Root) {
  std::vector<std::string> Roots = {Root};
  if (fs::is_directory(Root + "/src"))
    Roots.push_back(Root + "/src");
  return Roots;
}

/// A project's Python files by module path: the path without ".py", a
/// package's __init__.py by its folder.
class ModuleIndex {
public:
  void add(StringRef File) {
    StringRef Module = File;
    Module.consume_back(".py");
    if (path::filename(Module) == "__init__")
      Module = path::parent_path(Module);
    Files[Module] = File.str();
  }
  /// The files the module Spelled, imported by Importer, may be.
  std::vector<std::string> resolve(StringRef Importer, StringRef Spelled,
                                   const std::vector<std::string> &Roots) const {
    std::vector<std::string> Found;
    StringRef Rest = Spelled.ltrim('.');
    size_t Level = Spelled.size() - Rest.size();
    std::string Inside = Rest.str();
    std::replace(Inside.begin(), Inside.end(), '.', '/');
    auto Look = [&](StringRef Base) {
      std::string Key = Inside.empty() ? Base.str() : (Base + "/" + Inside).str();
      auto It = Files.find(Key);
      if (It != Files.end())
        Found.push_back(It->second);
    };
    StringRef Base = path::parent_path(Importer);
    if (Level > 0) {
      for (size_t I = 1; I < Level; ++I)
        Base = path::parent_path(Base);
      Look(Base);
      return Found;
    }
    Look(Base);
    for (const std::string &Root : Roots)
      Look(Root);
    return Found;
  }

private:
  llvm::StringMap<std::string> Files;
};

} // namespace

PythonProject
readPythonProject(llvm::ArrayRef<std::pair<std::string, StringRef>> Files) {
  PythonProject Project;
  llvm::StringSet<> Checked;
  for (const auto &File : Files)
    Checked.insert(File.first);
  // Each project once, however many of its files are checked.
  std::map<std::string, std::vector<std::string>> ProjectFiles;
  std::vector<std::string> RootOf;
  for (const auto &File : Files) {
    RootOf.push_back(projectRoot(File.first));
    Project.SourceRoots.push_back(sourceRoots(RootOf.back()));
    if (!ProjectFiles.count(RootOf.back())) {
      // The project's own excludes apply; the errors of configurations
      // met on the way are not this run's (their files are not checked).
      PythonConfigs Walked;
      ProjectFiles[RootOf.back()] =
          walkFolder(RootOf.back(), Walked, /*FollowLinks=*/false).PythonFiles;
    }
  }
  for (const auto &[Root, Candidates] : ProjectFiles) {
    std::vector<std::string> Roots = sourceRoots(Root);
    ModuleIndex Index;
    for (const std::string &Candidate : Candidates)
      Index.add(Candidate);
    std::map<std::string, std::unique_ptr<llvm::MemoryBuffer>> Texts;
    llvm::StringMap<std::vector<std::string>> ImportsOf;
    auto ReadImports = [&](StringRef File, StringRef Text) {
      std::vector<std::string> &Imports = ImportsOf[File];
      for (const std::string &Module : importedModules(Text))
        for (std::string &Target : Index.resolve(File, Module, Roots))
          if (Target != File)
            Imports.push_back(std::move(Target));
    };
    FileList Seeds;
    for (size_t I = 0; I < Files.size(); ++I)
      if (RootOf[I] == Root) {
        ReadImports(Files[I].first, Files[I].second);
        Seeds.insert(Files[I].first);
      }
    for (const std::string &Candidate : Candidates) {
      if (Checked.count(Candidate))
        continue;
      // A FIFO or a device named *.py would block the read.
      RegularFileRead Text = readRegularFile(Candidate);
      if (!Text)
        continue;
      ReadImports(Candidate, Text.Buffer->getBuffer());
      Texts[Candidate] = std::move(Text.Buffer);
      // A file that imports a checked one calls into it.
      if (llvm::any_of(ImportsOf[Candidate], [&](const std::string &Target) {
            return Checked.count(Target);
          }))
        Seeds.insert(Candidate);
    }
    // A package's __init__.py that imports a checked file re-exports it:
    // the files that import the package call into the checked file too.
    llvm::StringSet<> Reexporters;
    for (const std::string &Candidate : Candidates)
      if (path::filename(Candidate) == "__init__.py" &&
          llvm::any_of(ImportsOf[Candidate], [&](const std::string &Target) {
            return Checked.count(Target);
          }))
        Reexporters.insert(Candidate);
    if (!Reexporters.empty())
      for (const std::string &Candidate : Candidates)
        if (!Checked.count(Candidate) &&
            llvm::any_of(ImportsOf[Candidate], [&](const std::string &Target) {
              return Reexporters.count(Target);
            }))
          Seeds.insert(Candidate);
    // What the checked files and their importers import, transitively.
    FileList Read = Seeds;
    for (size_t I = 0; I < Read.size(); ++I)
      for (const std::string &Target : ImportsOf[Read[I]])
        Read.insert(Target);
    for (const std::string &File : Read) {
      if (Checked.count(File) || !Texts.count(File))
        continue;
      Project.Context.push_back({File, std::move(Texts[File])});
      Project.ContextRoots.push_back(Roots);
    }
  }
  return Project;
}

} // namespace ddpguard
