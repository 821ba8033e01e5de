//===- RuffOutput.cpp -----------------------------------------------------===//

#include "RuffOutput.h"
#include "Tidy/CheckNames.h"
#include "llvm/ADT/STLExtras.h"
#include <algorithm>
#include <map>
#include <set>
#include <tuple>

using clang::tidy::ClangTidyError;
using clang::tooling::DiagnosticMessage;

namespace ddpguard {

void sortReport(RunReport &Report, LineTable &Lines) {
  auto Key = [&](const ClangTidyError &E) {
    auto [Line, Column] = Lines.position(E.Message.FilePath, E.Message.FileOffset);
    return std::make_tuple(workingPath(E.Message.FilePath), Line, Column,
                           E.DiagnosticName);
  };
  auto ByPlace = [&](const ClangTidyError &A, const ClangTidyError &B) {
    return Key(A) < Key(B);
  };
  std::stable_sort(Report.Findings.begin(), Report.Findings.end(), ByPlace);
  std::stable_sort(Report.CompilerWarnings.begin(),
                   Report.CompilerWarnings.end(), ByPlace);
}

bool repeatsInEveryFinding(NoteKind Kind) {
  return Kind == NoteKind::JudgedBy || Kind == NoteKind::EveryTorch;
}

static std::string place(const DiagnosticMessage &M, LineTable &Lines) {
  auto [Line, Column] = Lines.position(M.FilePath, M.FileOffset);
  return workingPath(M.FilePath) + ":" + std::to_string(Line) + ":" +
         std::to_string(Column);
}

void writeConcise(llvm::raw_ostream &OS, const RunReport &Report,
                  LineTable &Lines, bool ShowFixEffects) {
  // Said once, in the order first met.
  std::vector<std::string> RunNotes;
  std::set<std::string> Said;
  for (const Finding &F : Report.Findings) {
    OS << place(F.Message, Lines) << ": " << F.DiagnosticName
       << (F.Message.Fix.empty() ? " " : " [*] ") << F.Message.Message
       << "\n";
    bool ShowFix = ShowFixEffects && !F.Message.Fix.empty();
    if (ShowFix && !F.FixTitle.empty())
      OS << "  fix: " << F.FixTitle << "\n";
    for (size_t I = 0; I < F.Notes.size(); ++I) {
      if (ShowFix && F.kindOf(I) == NoteKind::FixEffect)
        OS << "  note: " << F.Notes[I].Message << "\n";
      if (repeatsInEveryFinding(F.kindOf(I)) &&
          Said.insert(F.Notes[I].Message).second)
        RunNotes.push_back(F.Notes[I].Message);
    }
  }
  for (const ClangTidyError &W : Report.CompilerWarnings)
    OS << place(W.Message, Lines) << ": " << W.DiagnosticName << " "
       << W.Message.Message << "\n";
  for (const std::string &Note : RunNotes)
    OS << "note: " << Note << "\n";
}

/// A workflow command's message: '%', CR and LF escaped.
static std::string githubData(llvm::StringRef Text) {
  std::string Result;
  for (char C : Text) {
    if (C == '%')
      Result += "%25";
    else if (C == '\r')
      Result += "%0D";
    else if (C == '\n')
      Result += "%0A";
    else
      Result += C;
  }
  return Result;
}

/// A workflow command's property value: also ':' and ','.
static std::string githubProperty(llvm::StringRef Text) {
  std::string Result;
  for (char C : githubData(Text)) {
    if (C == ':')
      Result += "%3A";
    else if (C == ',')
      Result += "%2C";
    else
      Result += C;
  }
  return Result;
}

void writeGithub(llvm::raw_ostream &OS, const RunReport &Report,
                 LineTable &Lines) {
  auto Annotate = [&](llvm::StringRef Level, const ClangTidyError &E) {
    auto [Line, Column] =
        Lines.position(E.Message.FilePath, E.Message.FileOffset);
    OS << "::" << Level
       << " title=" << githubProperty("ddpguard (" + E.DiagnosticName + ")")
       << ",file=" << githubProperty(workingPath(E.Message.FilePath))
       << ",line=" << Line << ",col=" << Column
       << "::" << githubData(E.Message.Message) << "\n";
  };
  for (const Finding &F : Report.Findings)
    Annotate("error", F);
  for (const ClangTidyError &W : Report.CompilerWarnings)
    Annotate("warning", W);
  for (const FileProblem &P : Report.Errors) {
    OS << "::error title=ddpguard,file=" << githubProperty(workingPath(P.File));
    if (P.Offset) {
      auto [Line, Column] = Lines.position(P.File, *P.Offset);
      OS << ",line=" << Line << ",col=" << Column;
    }
    OS << "::" << githubData(P.Message) << "\n";
  }
}

void writeStatistics(llvm::raw_ostream &OS, const RunReport &Report) {
  std::map<std::string, std::pair<unsigned, unsigned>> Counts;
  for (const Finding &F : Report.Findings) {
    auto &[All, Fixable] = Counts[F.DiagnosticName];
    ++All;
    Fixable += !F.Message.Fix.empty();
  }
  std::vector<std::pair<std::string, std::pair<unsigned, unsigned>>> Rows(
      Counts.begin(), Counts.end());
  std::stable_sort(Rows.begin(), Rows.end(), [](const auto &A, const auto &B) {
    return A.second.first > B.second.first;
  });
  for (const auto &[Check, Count] : Rows) {
    OS << llvm::format("%5u", Count.first) << "\t" << Check;
    if (Count.second)
      OS << "\t[*] " << Count.second << " fixable";
    OS << "\n";
  }
}

static std::string counted(size_t N, llvm::StringRef Noun) {
  return std::to_string(N) + " " + Noun.str() + (N == 1 ? "" : "s");
}

void writeSummary(llvm::raw_ostream &OS, const RunReport &Report,
                  unsigned FixedCount) {
  if (FixedCount)
    OS << "Fixed " << counted(FixedCount, "problem") << ".\n";
  if (Report.Findings.empty() && Report.Errors.empty()) {
    OS << "All checks passed!\n";
    return;
  }
  size_t Fixable = llvm::count_if(
      Report.Findings, [](const Finding &F) { return !F.Message.Fix.empty(); });
  OS << "Found " << counted(Report.Findings.size(), "problem");
  if (Fixable)
    OS << " (" << Fixable << " fixable with --fix)";
  if (!Report.Errors.empty())
    OS << "; " << counted(Report.Errors.size(), "error")
       << " kept files from being checked (listed on standard error)";
  OS << ".\n";
}

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

} // namespace ddpguard
