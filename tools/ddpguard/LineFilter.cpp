//===- LineFilter.cpp -----------------------------------------------------===//

#include "LineFilter.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/Regex.h"
#include <climits>

using clang::tidy::ClangTidyError;
using clang::tooling::DiagnosticMessage;
using namespace llvm;

namespace ddpguard {

/// clang-tidy's --line-filter, read as the JSON it is (clang-tidy reads it
/// with its YAML parser, whose errors say "YAML"); Why says what is wrong.
static std::optional<std::vector<clang::tidy::FileFilter>>
lineFilterOf(StringRef Text, std::string &Why) {
  Expected<json::Value> Parsed = json::parse(Text);
  if (!Parsed) {
    std::string Message = toString(Parsed.takeError());
    SmallVector<StringRef, 4> Parts;
    // llvm::json says "[line:column, byte=N]: message".
    if (Regex("^\\[([0-9]+):([0-9]+), byte=[0-9]+\\]: (.*)$")
            .match(Message, &Parts))
      Message =
          ("line " + Parts[1] + ", column " + Parts[2] + ": " + Parts[3]).str();
    Why = "not valid JSON: " + Message;
    return std::nullopt;
  }
  const json::Array *Entries = Parsed->getAsArray();
  if (!Entries) {
    Why = "expected a JSON array of {\"name\": ..., \"lines\": [[first, "
          "last], ...]} objects";
    return std::nullopt;
  }
  std::vector<clang::tidy::FileFilter> Filters;
  for (const json::Value &Entry : *Entries) {
    const json::Object *Object = Entry.getAsObject();
    std::optional<StringRef> Name =
        Object ? Object->getString("name") : std::nullopt;
    if (!Name) {
      Why = "each entry must be an object with a \"name\" string";
      return std::nullopt;
    }
    for (const auto &Key : *Object)
      if (Key.first != "name" && Key.first != "lines") {
        Why = "unknown key '" + Key.first.str() +
              "' (the keys are name and lines)";
        return std::nullopt;
      }
    clang::tidy::FileFilter Filter;
    Filter.Name = Name->str();
    if (const json::Value *Lines = Object->get("lines")) {
      const json::Array *Ranges = Lines->getAsArray();
      for (size_t I = 0; Ranges && I < Ranges->size(); ++I) {
        const json::Array *Range = (*Ranges)[I].getAsArray();
        std::optional<int64_t> First, Last;
        if (Range && Range->size() == 2) {
          First = (*Range)[0].getAsInteger();
          Last = (*Range)[1].getAsInteger();
        }
        if (!First || !Last || *First < 0 || *Last < 0 || *First > UINT_MAX ||
            *Last > UINT_MAX) {
          Ranges = nullptr;
          break;
        }
        Filter.LineRanges.emplace_back(*First, *Last);
      }
      if (!Ranges) {
        Why = "\"lines\" of '" + Filter.Name +
              "' must be an array of [first, last] pairs of line numbers";
        return std::nullopt;
      }
    }
    Filters.push_back(std::move(Filter));
  }
  return Filters;
}

Expected<LineFilter> LineFilter::fromJson(StringRef Text) {
  LineFilter Filter;
  std::string Why;
  std::optional<std::vector<clang::tidy::FileFilter>> Filters =
      lineFilterOf(Text, Why);
  if (!Filters)
    return createStringError(inconvertibleErrorCode(),
                             "invalid --line-filter '%s': %s",
                             Text.str().c_str(), Why.c_str());
  Filter.Json.LineFilter = std::move(*Filters);
  for (const clang::tidy::FileFilter &F : Filter.Json.LineFilter)
    for (const auto &[First, Last] : F.LineRanges)
      if (First == 0 || Last < First)
        return createStringError(
            inconvertibleErrorCode(),
            "invalid --line-filter: the range [%u,%u] of '%s' is not a range "
            "of lines (1-based, first <= last)",
            First, Last, F.Name.c_str());
  return std::move(Filter);
}

LineFilter LineFilter::fromGitDiff(std::string Rev) {
  LineFilter Filter;
  Filter.Rev = std::move(Rev);
  return Filter;
}

namespace {

struct Output {
  int Status = -1;
  std::string Out;
  std::string Err;
};

/// Runs git in Directory with Args; Status is -1 when it could not run.
Output runGit(StringRef Directory, ArrayRef<std::string> Args) {
  Output Result;
  ErrorOr<std::string> Git = sys::findProgramByName("git");
  if (!Git) {
    Result.Err = "git is not on PATH";
    return Result;
  }
  SmallString<128> OutPath, ErrPath;
  if (sys::fs::createTemporaryFile("ddpguard-git", "out", OutPath) ||
      sys::fs::createTemporaryFile("ddpguard-git", "err", ErrPath)) {
    Result.Err = "cannot create a temporary file";
    return Result;
  }
  std::vector<StringRef> Argv{*Git, "-C", Directory};
  for (const std::string &A : Args)
    Argv.push_back(A);
  std::optional<StringRef> Redirects[] = {StringRef(""), StringRef(OutPath),
                                          StringRef(ErrPath)};
  std::string Message;
  Result.Status = sys::ExecuteAndWait(*Git, Argv, std::nullopt, Redirects, 0,
                                      0, &Message);
  if (auto Buffer = MemoryBuffer::getFile(OutPath))
    Result.Out = (*Buffer)->getBuffer().str();
  if (auto Buffer = MemoryBuffer::getFile(ErrPath))
    Result.Err = (*Buffer)->getBuffer().str();
  if (Result.Status < 0 && Result.Err.empty())
    Result.Err = Message;
  sys::fs::remove(OutPath);
  sys::fs::remove(ErrPath);
  return Result;
}

/// The first line git wrote to standard error, or what failed.
std::string firstLine(const Output &O) {
  StringRef Text = StringRef(O.Err).trim();
  if (Text.empty())
    return "exit status " + std::to_string(O.Status);
  return Text.split('\n').first.str();
}

} // namespace

const LineFilter::FileLines &
LineFilter::changedLines(const std::string &File,
                         std::vector<FileProblem> &Errors) {
  auto [It, Inserted] = Changed.try_emplace(File);
  if (!Inserted)
    return It->second;
  FileLines &Result = It->second;
  StringRef Directory = sys::path::parent_path(File);
  std::string Name = sys::path::filename(File).str();
  // A file outside a repository, or a revision the repository does not
  // have: git diff would fall back to comparing files, or say less.
  Output Verify =
      runGit(Directory, {"rev-parse", "--verify", "--end-of-options",
                         *Rev + "^{commit}"});
  if (Verify.Status != 0) {
    Errors.push_back({File, "--diff-base=" + *Rev + ": " + firstLine(Verify)});
    Result.Failed = true;
    return Result;
  }
  Output Diff = runGit(Directory, {"diff", "--no-ext-diff", "--no-color",
                                   "--no-renames", "-U0", *Rev, "--", Name});
  if (Diff.Status != 0) {
    Errors.push_back({File, "--diff-base=" + *Rev + ": git diff failed: " +
                                firstLine(Diff)});
    Result.Failed = true;
    return Result;
  }
  // Hunk headers: @@ -a[,b] +c[,d] @@; the new side's lines c..c+d-1 (d is
  // 1 when omitted, and 0 for a deletion, which leaves no line behind).
  SmallVector<StringRef> DiffLines;
  StringRef(Diff.Out).split(DiffLines, '\n');
  for (StringRef Line : DiffLines) {
    if (!Line.consume_front("@@ "))
      continue;
    StringRef New = Line.split(' ').second.split(' ').first;
    if (!New.consume_front("+"))
      continue;
    auto [StartText, CountText] = New.split(',');
    unsigned Start = 0, Count = 1;
    if (StartText.getAsInteger(10, Start) ||
        (!CountText.empty() && CountText.getAsInteger(10, Count)))
      continue;
    if (Count > 0)
      Result.Lines.push_back({Start, Start + Count - 1});
  }
  if (Result.Lines.empty()) {
    // Nothing changed, or a file git does not track: all of it is new.
    Output Tracked =
        runGit(Directory, {"ls-files", "--error-unmatch", "--", Name});
    if (Tracked.Status != 0)
      Result.All = true;
  }
  return Result;
}

void LineFilter::prepare(const std::string &File,
                         std::vector<FileProblem> &Errors) {
  if (Rev)
    changedLines(File, Errors);
}

bool LineFilter::selected(const std::string &File, unsigned Line,
                          std::vector<FileProblem> &Errors) {
  if (!Rev) {
    // clang-tidy's ClangTidyDiagnosticConsumer::passesLineFilter.
    if (Json.LineFilter.empty())
      return true;
    for (const clang::tidy::FileFilter &Filter : Json.LineFilter)
      if (StringRef(File).ends_with(Filter.Name)) {
        if (Filter.LineRanges.empty())
          return true;
        return llvm::any_of(Filter.LineRanges, [&](const auto &Range) {
          return Range.first <= Line && Line <= Range.second;
        });
      }
    return false;
  }
  const FileLines &Lines = changedLines(File, Errors);
  if (Lines.All || Lines.Failed)
    return true;
  return llvm::any_of(Lines.Lines, [&](const auto &Range) {
    return Range.first <= Line && Line <= Range.second;
  });
}

bool LineFilter::passes(const ClangTidyError &F, LineTable &Lines,
                        std::vector<FileProblem> &Errors) {
  auto On = [&](const DiagnosticMessage &M) {
    if (M.FilePath.empty())
      return false;
    return selected(M.FilePath, Lines.position(M.FilePath, M.FileOffset).first,
                    Errors);
  };
  return On(F.Message) || llvm::any_of(F.Notes, On);
}

} // namespace ddpguard
