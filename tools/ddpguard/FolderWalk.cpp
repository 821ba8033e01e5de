//===- FolderWalk.cpp -----------------------------------------------------===//

#include "FolderWalk.h"
#include "IgnoreRules.h"
#include "PythonFiles.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include <set>

using namespace llvm;

namespace ddpguard {

bool isCppSourceFile(StringRef Path) {
  StringRef Extension = sys::path::extension(Path);
  return llvm::is_contained({".cpp", ".cc", ".cxx", ".c++", ".C", ".cu"},
                            Extension);
}

bool skippedFolderName(StringRef Name) {
  // ruff's default exclude, less the hidden names (all hidden folders are
  // skipped), and __pycache__.
  return Name.starts_with(".") ||
         llvm::is_contained({"__pycache__", "__pypackages__", "_build",
                             "buck-out", "build", "dist", "node_modules",
                             "site-packages", "venv"},
                            Name);
}

std::string fileTypeWords(sys::fs::file_type Type) {
  switch (Type) {
  case sys::fs::file_type::fifo_file:
    return "a FIFO";
  case sys::fs::file_type::character_file:
    return "a character device";
  case sys::fs::file_type::block_file:
    return "a block device";
  case sys::fs::file_type::socket_file:
    return "a socket";
  default:
    return "not a regular file";
  }
}

namespace {

class Walker {
public:
  Walker(PythonConfigs &Configs, bool FollowLinks, FolderContents &Out)
      : Configs(Configs), FollowLinks(FollowLinks), Out(Out) {}

  void walk(StringRef Root) {
    sys::fs::file_status Status;
    if (std::error_code EC = sys::fs::status(Root, Status)) {
      Out.Warnings.push_back(Root.str() +
                             ": cannot read this folder: " + EC.message());
      return;
    }
    Seen.insert(Status.getUniqueID());
    std::vector<std::string> Lines;
    IgnoreRules Rules = IgnoreRules::above(Root, Lines).in(Root, Lines);
    llvm::append_range(Out.Warnings, Lines);
    Pending.push_back({Root.str(), std::move(Rules)});
    while (!Pending.empty()) {
      Folder Next = std::move(Pending.back());
      Pending.pop_back();
      visit(Next);
    }
    llvm::sort(Out.PythonFiles);
    llvm::sort(Out.CppSources);
  }

private:
  struct Folder {
    std::string Path;
    IgnoreRules Rules;
  };

  void visit(const Folder &F) {
    std::error_code EC;
    sys::fs::directory_iterator It(F.Path, EC, /*follow_symlinks=*/false), End;
    for (; !EC && It != End; It.increment(EC))
      entry(F, It->path(), It->type());
    if (EC)
      Out.Warnings.push_back(F.Path +
                             ": cannot read this folder: " + EC.message() +
                             "; the files in it are not checked");
  }

  void entry(const Folder &F, StringRef Path, sys::fs::file_type Type) {
    StringRef Name = sys::path::filename(Path);
    bool Python = isPythonFile(Name), Cpp = isCppSourceFile(Name);
    sys::fs::file_status Status;
    if (Type == sys::fs::file_type::type_unknown ||
        Type == sys::fs::file_type::symlink_file) {
      bool Link = Type == sys::fs::file_type::symlink_file;
      if (std::error_code EC = sys::fs::status(Path, Status)) {
        if (Python || Cpp)
          Out.Skipped.push_back(
              {Path.str(),
               Link ? "it is a link to nothing (" + EC.message() + ")"
                    : "cannot read: " + EC.message()});
        return;
      }
      // Links to folders are not followed unless asked.
      if (Link && Status.type() == sys::fs::file_type::directory_file &&
          !FollowLinks)
        return;
      Type = Status.type();
    }
    bool IsFolder = Type == sys::fs::file_type::directory_file;
    if (IsFolder) {
      if (skippedFolderName(Name))
        return;
      if (sys::fs::exists(Path + "/pyvenv.cfg"))
        return;
    } else if (!Python && !Cpp) {
      return;
    }
    if (F.Rules.ignored(Path, IsFolder))
      return;
    if (Configs.excluded(Path)) {
      Out.AnyExcluded = true;
      return;
    }
    if (IsFolder) {
      if (Status.type() == sys::fs::file_type::status_error &&
          sys::fs::status(Path, Status))
        return;
      // Each real folder once: a link back up is no loop.
      if (!Seen.insert(Status.getUniqueID()).second)
        return;
      std::vector<std::string> Lines;
      Pending.push_back({Path.str(), F.Rules.in(Path, Lines)});
      llvm::append_range(Out.Warnings, Lines);
      return;
    }
    if (Type != sys::fs::file_type::regular_file) {
      Out.Skipped.push_back({Path.str(), "it is " + fileTypeWords(Type) +
                                             ", not a regular file"});
      return;
    }
    (Python ? Out.PythonFiles : Out.CppSources).push_back(Path.str());
  }

  PythonConfigs &Configs;
  bool FollowLinks;
  FolderContents &Out;
  std::set<sys::fs::UniqueID> Seen;
  std::vector<Folder> Pending;
};

} // namespace

FolderContents walkFolder(StringRef Folder, PythonConfigs &Configs,
                          bool FollowLinks) {
  SmallString<256> Root(Folder);
  sys::fs::make_absolute(Root);
  sys::path::remove_dots(Root, /*remove_dot_dot=*/true);
  FolderContents Out;
  Walker(Configs, FollowLinks, Out).walk(Root);
  return Out;
}

} // namespace ddpguard
