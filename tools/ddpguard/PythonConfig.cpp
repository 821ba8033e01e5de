//===- PythonConfig.cpp ---------------------------------------------------===//

#include "PythonConfig.h"
#include "RegularFile.h"
#include "Tidy/CheckNames.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/ConvertUTF.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
// toml++ 3.3 asserts on some input it then reports as a parse error: a NUL
// where a key starts, "1979-05-27T.07:32:00Z" (assert(), so SIGABRT in a
// build without NDEBUG; measured). Its checks after each assertion hold, so
// every build runs as a release build does.
#define TOML_ASSERT(expr) static_assert(true)
#include <toml++/toml.h>

using namespace llvm;

namespace ddpguard {

/// How much of Check a selector covers: its length when it names Check or a
/// prefix of it ("ALL" covers every check, least specifically), else none.
static std::optional<size_t> coverage(llvm::StringRef Check,
                                      llvm::StringRef Selector) {
  if (Selector == "ALL")
    return 0;
  if (Check.starts_with(Selector) && !Selector.empty())
    return Selector.size();
  return std::nullopt;
}

bool checkSelected(llvm::StringRef Check, llvm::ArrayRef<std::string> Select,
                   llvm::ArrayRef<std::string> Ignore) {
  auto Best = [&](llvm::ArrayRef<std::string> List) {
    std::optional<size_t> Result;
    for (const std::string &Selector : List)
      if (std::optional<size_t> C = coverage(Check, Selector))
        Result = std::max(Result.value_or(0), *C);
    return Result;
  };
  std::optional<size_t> Selected =
      Select.empty() ? std::optional<size_t>(0) : Best(Select);
  std::optional<size_t> Ignored = Best(Ignore);
  if (!Selected)
    return false;
  return !Ignored || *Ignored < *Selected;
}

std::vector<std::string>
unknownCheckSelectors(llvm::ArrayRef<std::string> Selectors) {
  std::vector<std::string> Unknown;
  for (const std::string &Selector : Selectors)
    if (llvm::none_of(checks::All, [&](llvm::StringRef Check) {
          return coverage(Check, Selector).has_value();
        }))
      Unknown.push_back(Selector);
  return Unknown;
}

bool PythonConfig::matches(const Exclusion &Glob, StringRef File) {
  return Glob.Name.match(sys::path::filename(File)) ||
         Glob.Anchored.match(File);
}

std::optional<TorchVersion> parseTorchVersion(StringRef Text) {
  auto [Release, Local] = Text.trim().split('+');
  bool LocalValid = !Local.empty() && llvm::all_of(Local, [](char C) {
    return isAlnum(C) || C == '.' || C == '_' || C == '-';
  });
  if (Release.size() != Text.trim().size() && !LocalValid)
    return std::nullopt;
  return TorchVersion::parse(Release);
}

static std::string absolutePath(StringRef Path) {
  SmallString<256> Absolute(Path);
  sys::fs::make_absolute(Absolute);
  sys::path::remove_dots(Absolute, /*remove_dot_dot=*/true);
  return std::string(Absolute);
}

/// Why Text cannot be TOML before toml++ reads it (which aborts on some
/// such bytes instead of reporting them): TOML is UTF-8 (toml.io, "Spec")
/// and has no NUL. Empty when it may be.
static std::string notTomlText(StringRef Text) {
  const auto *Begin = reinterpret_cast<const UTF8 *>(Text.begin());
  const UTF8 *At = Begin;
  size_t Bad = StringRef::npos;
  std::string What;
  if (!isLegalUTF8String(&At, Begin + Text.size())) {
    Bad = At - Begin;
    What = "is not UTF-8 text (the byte 0x" +
           utohexstr(static_cast<unsigned char>(Text[Bad]), /*LowerCase=*/false,
                     /*Width=*/2) +
           "); TOML files must be UTF-8";
  }
  if (size_t Nul = Text.find('\0'); Nul < Bad) {
    Bad = Nul;
    What = "holds a NUL byte, which TOML does not allow";
  }
  if (Bad == StringRef::npos)
    return "";
  StringRef Before = Text.take_front(Bad);
  size_t LineStart = Before.rfind('\n') + 1; // npos + 1 == 0
  return "configuration error at line " +
         std::to_string(Before.count('\n') + 1) + ", column " +
         std::to_string(Bad - LineStart + 1) + ": the file " + What;
}

namespace {

/// Reads the keys of one table into Config; each wrong one is an error.
class KeyReader {
public:
  struct Problem {
    unsigned Line, Column;
    std::string Message;
  };

  KeyReader(PythonConfig &Config, StringRef Folder, bool Dotfile,
            std::vector<Problem> &Problems)
      : Config(Config), Folder(Folder), Dotfile(Dotfile), Problems(Problems) {}

  void read(const toml::table &Table) {
    for (auto &&[Key, Value] : Table) {
      std::string_view Name = Key.str();
      if (Name == "torch-version")
        readTorch(Value);
      else if (Name == "exclude" || Name == "extend-exclude")
        readExclude(Value, Name);
      else if (Name == "assume-modules-have-buffers")
        readAssume(Value);
      else if (Name == "ignore")
        Config.Ignore = checkSelectors(Value, "ignore");
      else if (Name == "select")
        Config.Select = checkSelectors(Value, "select");
      else if (Name == "per-file-ignores")
        readPerFileIgnores(Value);
      else if (Name == "tool" && Dotfile)
        error(Key.source(), "a .ddpguard holds the keys themselves, without "
                            "a [tool.ddpguard] header");
      else
        error(Key.source(),
              "unknown key '" + std::string(Name) +
                  "' (the keys are assume-modules-have-buffers, exclude, "
                  "extend-exclude, ignore, per-file-ignores, select and "
                  "torch-version)");
    }
  }

private:
  void error(const toml::source_region &At, const std::string &Message) {
    Problems.push_back({At.begin.line, At.begin.column,
                        "configuration error at line " +
                            std::to_string(At.begin.line) + ", column " +
                            std::to_string(At.begin.column) + ": " + Message});
  }

  void readTorch(const toml::node &Value) {
    const auto *Text = Value.as_string();
    std::optional<TorchVersion> Version;
    if (Text)
      Version = parseTorchVersion(Text->get());
    if (!Version) {
      error(Value.source(), "torch-version expects a version string such as "
                            "\"2.11.0\" or \"2.11.0+cu130\"");
      return;
    }
    Config.Torch = Version;
  }

  /// The strings of an array; an error for anything else.
  std::vector<std::pair<std::string, const toml::node *>>
  strings(const toml::node &Value, StringRef Key) {
    std::vector<std::pair<std::string, const toml::node *>> Items;
    const auto *Array = Value.as_array();
    if (!Array) {
      error(Value.source(), (Key + " expects an array of strings").str());
      return Items;
    }
    for (const toml::node &Item : *Array) {
      if (const auto *Text = Item.as_string())
        Items.push_back({Text->get(), &Item});
      else
        error(Item.source(), (Key + " expects an array of strings").str());
    }
    return Items;
  }

  void readExclude(const toml::node &Value, StringRef Key) {
    for (const auto &[Pattern, Item] : strings(Value, Key))
      if (std::unique_ptr<PythonConfig::Exclusion> Made =
              glob(Pattern, *Item, Key))
        Config.Exclude.push_back(std::move(Made));
  }

  /// An exclude-style glob: against a path's last component, and, joined
  /// to the configuration's folder, against the whole path.
  std::unique_ptr<PythonConfig::Exclusion>
  glob(const std::string &Pattern, const toml::node &Item, StringRef Key) {
    SmallString<256> Anchored(Pattern);
    if (!sys::path::is_absolute(Anchored)) {
      Anchored = Folder;
      sys::path::append(Anchored, Pattern);
    }
    auto Made = std::make_unique<PythonConfig::Exclusion>();
    Made->NameText = Pattern;
    Made->AnchoredText = std::string(Anchored);
    Expected<GlobPattern> Name = GlobPattern::create(Made->NameText);
    Expected<GlobPattern> Whole = GlobPattern::create(Made->AnchoredText);
    if (!Name || !Whole) {
      std::string Why =
          toString(Name ? Whole.takeError() : Name.takeError());
      if (!Name)
        consumeError(Whole.takeError());
      error(Item.source(),
            (Key + ": invalid glob '" + Pattern + "': " + Why).str());
      return nullptr;
    }
    Made->Name = std::move(*Name);
    Made->Anchored = std::move(*Whole);
    return Made;
  }

  void readAssume(const toml::node &Value) {
    if (const auto *Flag = Value.as_boolean())
      Config.AssumeModulesHaveBuffers = Flag->get();
    else
      error(Value.source(),
            "assume-modules-have-buffers expects true or false");
  }

  /// Check names or prefixes of names; an error for one that selects none.
  std::vector<std::string> checkSelectors(const toml::node &Value,
                                          StringRef Key) {
    std::vector<std::string> Selectors;
    for (const auto &[Check, Item] : strings(Value, Key)) {
      if (unknownCheckSelectors({Check}).empty()) {
        Selectors.push_back(Check);
        continue;
      }
      std::vector<std::string> Known(std::begin(checks::All),
                                     std::end(checks::All));
      error(Item->source(), (Key + ": unknown check '" + Check +
                             "' (the checks are " + llvm::join(Known, ", ") +
                             ", or a prefix of their names)")
                                .str());
    }
    return Selectors;
  }

  void readPerFileIgnores(const toml::node &Value) {
    const auto *Table = Value.as_table();
    if (!Table) {
      error(Value.source(), "per-file-ignores expects a table of globs, each "
                            "with an array of checks");
      return;
    }
    for (auto &&[Key, Checks] : *Table) {
      std::string Pattern(Key.str());
      std::unique_ptr<PythonConfig::Exclusion> Files =
          glob(Pattern, Checks, "per-file-ignores");
      std::vector<std::string> Selectors =
          checkSelectors(Checks, "per-file-ignores");
      if (Files)
        Config.PerFileIgnores.push_back({std::move(Files), Selectors});
    }
  }

  PythonConfig &Config;
  StringRef Folder;
  bool Dotfile;
  std::vector<Problem> &Problems;
};

} // namespace

std::optional<PythonConfig> PythonConfigs::readIn(StringRef Folder) {
  for (StringRef Name : {".ddpguard", "pyproject.toml"}) {
    SmallString<256> Path(Folder);
    sys::path::append(Path, Name);
    // A folder, a FIFO or a device of that name is no configuration.
    RegularFileRead File = readRegularFile(Path);
    if (!File) {
      if (File.NotRegular.empty() && !File.missing())
        Errors.push_back({std::string(Path), File.problem()});
      continue;
    }
    PythonConfig Config;
    Config.Path = std::string(Path);
    bool Dotfile = Name == ".ddpguard";
    Config.Origin = (Dotfile ? "" : "[tool.ddpguard] in ") + workingPath(Path);
    toml::table Document;
    // A pyproject.toml that is no TOML may or may not hold our table: it is
    // reported, and the search goes on above it.
    StringRef Text = File.Buffer->getBuffer();
    if (std::string Problem = notTomlText(Text); !Problem.empty()) {
      Errors.push_back({Config.Path, Problem});
      if (Dotfile)
        return Config;
      continue;
    }
    try {
      Document = toml::parse(std::string_view(Text.data(), Text.size()),
                             std::string(Path));
    } catch (const toml::parse_error &Error) {
      const toml::source_position &At = Error.source().begin;
      Errors.push_back({Config.Path, "configuration error at line " +
                                         std::to_string(At.line) +
                                         ", column " +
                                         std::to_string(At.column) + ": " +
                                         std::string(Error.description())});
      if (Dotfile)
        return Config;
      continue;
    }
    const toml::table *Table = &Document;
    if (!Dotfile) {
      const toml::node *Ours = Document.at_path("tool.ddpguard").node();
      if (!Ours)
        continue;
      Table = Ours->as_table();
      if (!Table) {
        Errors.push_back({Config.Path,
                          "configuration error at line " +
                              std::to_string(Ours->source().begin.line) +
                              ": tool.ddpguard must be a table"});
        return Config;
      }
    }
    // The table's keys come sorted by name; its errors, by line.
    std::vector<KeyReader::Problem> Problems;
    KeyReader(Config, Folder, Dotfile, Problems).read(*Table);
    llvm::stable_sort(Problems, [](const auto &A, const auto &B) {
      return std::pair(A.Line, A.Column) < std::pair(B.Line, B.Column);
    });
    for (const KeyReader::Problem &P : Problems)
      Errors.push_back({Config.Path, P.Message});
    return Config;
  }
  return std::nullopt;
}

const PythonConfig &PythonConfigs::forFolder(StringRef Folder) {
  auto Found = ByFolder.find(Folder);
  if (Found != ByFolder.end())
    return *Found->second;
  const PythonConfig *Governing = &Defaults;
  if (std::optional<PythonConfig> Here = readIn(Folder)) {
    auto Stored = std::make_unique<PythonConfig>(std::move(*Here));
    Governing = Stored.get();
    Read[Governing->Path] = std::move(Stored);
  } else if (StringRef Parent = sys::path::parent_path(Folder);
             !Parent.empty() && Parent != Folder) {
    Governing = &forFolder(Parent);
  }
  ByFolder[Folder] = Governing;
  return *Governing;
}

const PythonConfig &PythonConfigs::forFile(StringRef File) {
  return forFolder(sys::path::parent_path(absolutePath(File)));
}

bool PythonConfigs::excluded(StringRef Path) {
  std::string Absolute = absolutePath(Path);
  const PythonConfig &Config = forFile(Absolute);
  return llvm::any_of(Config.Exclude, [&](const auto &E) {
    return PythonConfig::matches(*E, Absolute);
  });
}

bool PythonConfigs::reports(StringRef File, StringRef Check) {
  const PythonConfig &Config = forFile(File);
  for (const PythonConfig::PerFileIgnore &Ignored : Config.PerFileIgnores)
    if (PythonConfig::matches(*Ignored.Files, File) &&
        !checkSelected(Check, {}, Ignored.Checks))
      return false;
  if (CommandLine.Select)
    return checkSelected(Check, *CommandLine.Select, CommandLine.Ignore);
  return checkSelected(Check, Config.Select, Config.Ignore) &&
         checkSelected(Check, {}, CommandLine.Ignore);
}

bool PythonConfigs::excludedWithFolders(StringRef File) {
  std::string Absolute = absolutePath(File);
  const PythonConfig &Config = forFile(Absolute);
  if (Config.Path.empty())
    return false;
  StringRef Root = sys::path::parent_path(Config.Path);
  for (StringRef Path = Absolute;
       Path.size() > Root.size() && Path.starts_with(Root);
       Path = sys::path::parent_path(Path))
    if (excluded(Path))
      return true;
  return false;
}

std::vector<FileProblem> PythonConfigs::takeErrors() {
  return std::exchange(Errors, {});
}

} // namespace ddpguard
