//===- RuffOutput.cpp -----------------------------------------------------===//

#include "RuffOutput.h"
#include "FixWriter.h"
#include "UnifiedDiff.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MemoryBuffer.h"
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

std::vector<std::string>
fixedFindingLines(const std::vector<Finding> &Findings,
                  const std::vector<std::string> &Written, LineTable &Before) {
  std::set<std::string> WrittenFiles(Written.begin(), Written.end());
  std::vector<std::string> Lines;
  for (const Finding &F : Findings) {
    if (F.Message.Fix.empty() ||
        llvm::any_of(F.Message.Fix, [&](const auto &Entry) {
          return !WrittenFiles.count(resolvedPath(Entry.getKey()));
        }))
      continue;
    Lines.push_back(place(F.Message, Before) + ": " + F.DiagnosticName + " " +
                    F.Message.Message);
  }
  return Lines;
}

unsigned writeFixPreview(
    llvm::raw_ostream &Diff, llvm::raw_ostream &Summary,
    const std::vector<Finding> &Findings, std::vector<FileProblem> &Errors,
    std::optional<std::pair<std::string, llvm::StringRef>> Stdin) {
  ContentStamps NothingWritten;
  FixWriter Writer(NothingWritten, "none");
  unsigned Fixable = 0;
  for (const Finding &F : Findings) {
    Fixable += !F.Message.Fix.empty();
    Writer.collect(F, Errors);
  }
  for (const std::string &File : Writer.fixedFiles()) {
    std::string Before;
    bool FromStdin = Stdin && resolvedPath(Stdin->first) == File;
    if (FromStdin) {
      Before = Stdin->second.str();
    } else {
      llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> Buffer =
          llvm::MemoryBuffer::getFile(File, /*IsText=*/false,
                                      /*RequiresNullTerminator=*/false);
      if (!Buffer) {
        Errors.push_back({File, "cannot read: " + Buffer.getError().message()});
        continue;
      }
      Before = (*Buffer)->getBuffer().str();
    }
    llvm::Expected<std::string> After = Writer.fixedText(File, Before);
    if (!After) {
      Errors.push_back(
          {File, "cannot fix: " + llvm::toString(After.takeError())});
      continue;
    }
    Diff << unifiedDiff(workingPath(FromStdin ? Stdin->first : File), Before,
                        *After);
  }
  Summary << "Would fix " << Fixable << " problem" << (Fixable == 1 ? "" : "s");
  if (Findings.size() > Fixable)
    Summary << " (" << Findings.size() - Fixable << " not fixable)";
  Summary << ".\n";
  return Fixable;
}

} // namespace ddpguard
