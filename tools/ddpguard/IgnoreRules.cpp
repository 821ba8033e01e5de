//===- IgnoreRules.cpp ----------------------------------------------------===//

#include "IgnoreRules.h"
#include "RegularFile.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

using namespace llvm;

namespace ddpguard {

/// Whether the pattern character(s) at Pattern[At] match C; Used: how many
/// pattern characters they were. A '[' without its ']' is itself.
static bool matchesOne(StringRef Pattern, size_t At, char C, size_t &Used) {
  char P = Pattern[At];
  if (P == '?') {
    Used = 1;
    return true;
  }
  if (P == '\\' && At + 1 < Pattern.size()) {
    Used = 2;
    return Pattern[At + 1] == C;
  }
  if (P == '[') {
    size_t I = At + 1;
    bool Negated =
        I < Pattern.size() && (Pattern[I] == '!' || Pattern[I] == '^');
    if (Negated)
      ++I;
    bool Matched = false;
    bool First = true;
    for (; I < Pattern.size() && (First || Pattern[I] != ']'); First = false) {
      char Low = Pattern[I];
      if (Low == '\\' && I + 1 < Pattern.size())
        Low = Pattern[++I];
      ++I;
      char High = Low;
      if (I + 1 < Pattern.size() && Pattern[I] == '-' &&
          Pattern[I + 1] != ']') {
        High = Pattern[I + 1];
        if (High == '\\' && I + 2 < Pattern.size())
          High = Pattern[++I + 1];
        I += 2;
      }
      if (Low <= C && C <= High)
        Matched = true;
    }
    if (I < Pattern.size()) {
      Used = I + 1 - At;
      return Matched != Negated;
    }
  }
  Used = 1;
  return P == C;
}

/// One component against one name: `*` (any run of them) matches any run of
/// characters. On a mismatch only the last `*` takes one more character, so
/// the time is at most the product of the lengths.
static bool matchesComponent(StringRef Pattern, StringRef Name) {
  size_t P = 0, N = 0;
  size_t StarP = StringRef::npos, StarN = 0;
  while (N < Name.size()) {
    if (P < Pattern.size() && Pattern[P] == '*') {
      while (P < Pattern.size() && Pattern[P] == '*')
        ++P;
      StarP = P;
      StarN = N;
      continue;
    }
    size_t Used;
    if (P < Pattern.size() && matchesOne(Pattern, P, Name[N], Used)) {
      P += Used;
      ++N;
      continue;
    }
    if (StarP == StringRef::npos)
      return false;
    P = StarP;
    N = ++StarN;
  }
  while (P < Pattern.size() && Pattern[P] == '*')
    ++P;
  return P == Pattern.size();
}

bool matchesIgnoreGlob(StringRef Glob, StringRef Text) {
  SmallVector<StringRef, 8> Pattern, Path;
  Glob.split(Pattern, '/');
  Text.split(Path, '/');
  // Reach[j]: the pattern's components so far match Path's first j.
  std::vector<char> Reach(Path.size() + 1, 0), Next;
  Reach[0] = 1;
  for (size_t I = 0; I < Pattern.size(); ++I) {
    Next.assign(Path.size() + 1, 0);
    if (Pattern[I] == "**") {
      // Any number of components; the last `**` at least one ("dir/**" is
      // what is inside dir).
      bool Last = I + 1 == Pattern.size();
      bool Any = false;
      for (size_t J = 0; J <= Path.size(); ++J) {
        if (!Last)
          Any = Any || Reach[J];
        Next[J] = Any;
        if (Last)
          Any = Any || Reach[J];
      }
    } else {
      for (size_t J = 0; J < Path.size(); ++J)
        if (Reach[J] && matchesComponent(Pattern[I], Path[J]))
          Next[J + 1] = 1;
    }
    Reach.swap(Next);
  }
  return Reach[Path.size()];
}

IgnoreFile::IgnoreFile(std::string Base, StringRef Text)
    : Base(std::move(Base)) {
  SmallVector<StringRef, 32> Lines;
  Text.split(Lines, '\n');
  for (StringRef Line : Lines) {
    Line.consume_back("\r");
    // Trailing spaces go unless escaped with a backslash.
    while (Line.ends_with(" ") && !Line.drop_back().ends_with("\\"))
      Line = Line.drop_back();
    if (Line.empty() || Line.starts_with("#"))
      continue;
    Pattern P;
    P.Negated = Line.consume_front("!");
    P.FolderOnly = Line.consume_back("/");
    P.Anchored = Line.contains('/');
    Line.consume_front("/");
    if (Line.empty())
      continue;
    P.Glob = Line.str();
    Patterns.push_back(std::move(P));
  }
}

std::optional<bool> IgnoreFile::decide(StringRef Path, bool IsFolder) const {
  StringRef Relative = Path;
  if (!Relative.consume_front(Base) ||
      !(StringRef(Base).ends_with("/") || Relative.consume_front("/")) ||
      Relative.empty())
    return std::nullopt;
  StringRef Name = sys::path::filename(Relative);
  for (const Pattern &P : llvm::reverse(Patterns)) {
    if (P.FolderOnly && !IsFolder)
      continue;
    if (matchesIgnoreGlob(P.Glob, P.Anchored ? Relative : Name))
      return !P.Negated;
  }
  return std::nullopt;
}

void IgnoreRules::addFilesOf(StringRef Folder, bool ReadIgnore, bool ReadGit,
                             std::vector<std::string> &Warnings) {
  auto Read = [&](StringRef Base, StringRef Relative, Files &Into) {
    SmallString<256> Path(Folder);
    sys::path::append(Path, Relative);
    RegularFileRead File = readRegularFile(Path);
    if (!File) {
      // Not there is the usual case; a folder named .gitignore is no file.
      if (!File.missing() && File.NotRegular != "a directory")
        Warnings.push_back(std::string(Path) + ": " + File.problem() +
                           "; its patterns are not applied");
      return;
    }
    Into.push_back(std::make_shared<const IgnoreFile>(
        Base.str(), File.Buffer->getBuffer()));
  };
  if (ReadGit)
    Read(Folder, ".gitignore", Git);
  if (ReadIgnore)
    Read(Folder, ".ignore", Ignore);
}

IgnoreRules IgnoreRules::in(StringRef Folder,
                            std::vector<std::string> &Warnings) const {
  IgnoreRules Rules = *this;
  SmallString<256> Dot(Folder);
  sys::path::append(Dot, ".git");
  if (sys::fs::exists(Dot)) {
    // A repository of its own: the patterns of the one around it stop here.
    Rules.InRepository = true;
    Rules.Git.clear();
    SmallString<256> Exclude(Dot);
    sys::path::append(Exclude, "info", "exclude");
    RegularFileRead File = readRegularFile(Exclude);
    if (File)
      Rules.Git.push_back(std::make_shared<const IgnoreFile>(
          Folder.str(), File.Buffer->getBuffer()));
  }
  Rules.addFilesOf(Folder, /*ReadIgnore=*/true, Rules.InRepository, Warnings);
  return Rules;
}

IgnoreRules IgnoreRules::above(StringRef Root,
                               std::vector<std::string> &Warnings) {
  SmallVector<StringRef, 16> Folders;
  for (StringRef Folder = sys::path::parent_path(Root); !Folder.empty();
       Folder = sys::path::parent_path(Folder)) {
    Folders.push_back(Folder);
    if (Folder == sys::path::parent_path(Folder))
      break;
  }
  IgnoreRules Rules;
  for (StringRef Folder : llvm::reverse(Folders))
    Rules = Rules.in(Folder, Warnings);
  return Rules;
}

bool IgnoreRules::ignored(StringRef Path, bool IsFolder) const {
  for (const Files *Set : {&Ignore, &Git})
    for (const auto &File : llvm::reverse(*Set))
      if (std::optional<bool> Decision = File->decide(Path, IsFolder))
        return *Decision;
  return false;
}

} // namespace ddpguard
