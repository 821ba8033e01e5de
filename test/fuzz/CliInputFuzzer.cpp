//===- CliInputFuzzer.cpp - libFuzzer over the CLI's input handling -------===//
//
// Each input is the text of a C++ file that includes the mock LibTorch
// headers of the lit tests. It goes through what `ddpguard FILE -- FLAGS`
// does: the database for the flags after '--', clang-tidy with the check in
// each fix mode, the text, JSON and SARIF reports. Beyond "no crash" (the
// checker code is built with AddressSanitizer), every run checks what users
// rely on:
//  - the reports are well-formed JSON;
//  - the fixes of a file apply (no overlap, inside the file);
//  - a file that compiled still compiles once fixed (issue 11, item 6: a fix
//    spelled from a macro argument gave `forward_group(, )`).
//
//===----------------------------------------------------------------------===//

#include "Database.h"
#include "Report.h"
#include "clang-tidy/ClangTidy.h"
#include "clang-tidy/ClangTidyDiagnosticConsumer.h"
#include "clang-tidy/ClangTidyOptions.h"
#include "clang/Tooling/Core/Replacement.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/VirtualFileSystem.h"
#include "llvm/Support/raw_ostream.h"
#include <cstdint>
#include <cstdlib>
#include <string>

using namespace clang;
using namespace clang::tidy;

namespace {

const char CheckName[] = "ddp-multiple-forward-before-backward";

struct Workspace {
  std::string Directory;
  std::string Input;
  std::string Fixed;
  Workspace() {
    llvm::SmallString<128> Dir;
    if (std::error_code EC =
            llvm::sys::fs::createUniqueDirectory("ddpguard-fuzz", Dir)) {
      llvm::errs() << "fuzz: cannot create a work directory: " << EC.message()
                   << "\n";
      std::abort();
    }
    Directory = std::string(Dir);
    Input = Directory + "/input.cpp";
    Fixed = Directory + "/fixed.cpp";
  }
};

Workspace &workspace() {
  static Workspace W;
  return W;
}

void writeFile(const std::string &Path, llvm::StringRef Text) {
  std::error_code EC;
  llvm::raw_fd_ostream OS(Path, EC);
  if (EC) {
    llvm::errs() << "fuzz: cannot write " << Path << ": " << EC.message()
                 << "\n";
    std::abort();
  }
  OS << Text;
}

struct CheckResult {
  std::vector<ClangTidyError> Findings;
  std::vector<std::string> CompileErrors;
};

CheckResult check(const std::string &File, llvm::StringRef FixMode) {
  std::vector<std::string> Flags = {"-std=c++17", "-isystem",
                                    DDPGUARD_FUZZ_MOCK_DIR};
  auto Loaded = ddpguard::loadDatabase(
      std::make_unique<tooling::FixedCompilationDatabase>(".", Flags), "",
      File);
  if (!Loaded) {
    llvm::errs() << "fuzz: " << llvm::toString(Loaded.takeError()) << "\n";
    std::abort();
  }
  ClangTidyOptions Options = ClangTidyOptions::getDefaults();
  Options.Checks = std::string("-*,") + CheckName;
  Options.HeaderFilterRegex = ".*";
  Options.CheckOptions[(llvm::Twine(CheckName) + ".FixMode").str()] =
      ClangTidyOptions::ClangTidyValue(FixMode);
  ClangTidyContext Context(std::make_unique<DefaultOptionsProvider>(
      ClangTidyGlobalOptions(), Options));
  llvm::IntrusiveRefCntPtr<llvm::vfs::OverlayFileSystem> FS(
      new llvm::vfs::OverlayFileSystem(llvm::vfs::getRealFileSystem()));
  CheckResult Result;
  for (ClangTidyError &E :
       runClangTidy(Context, *Loaded->Database, {File}, FS,
                    /*ApplyAnyFix=*/true)) {
    if (E.DiagLevel == ClangTidyError::Error)
      Result.CompileErrors.push_back(E.Message.Message);
    else if (E.DiagnosticName == CheckName)
      Result.Findings.push_back(std::move(E));
  }
  return Result;
}

[[noreturn]] void fail(llvm::StringRef What, llvm::StringRef Source,
                       llvm::StringRef Detail) {
  llvm::errs() << "fuzz: " << What << "\n--- input ---\n"
               << Source << "\n--- detail ---\n"
               << Detail << "\n";
  std::abort();
}

void checkReports(const ddpguard::RunReport &Report, llvm::StringRef Source) {
  ddpguard::LineTable Lines;
  std::string Text;
  llvm::raw_string_ostream TextOS(Text);
  ddpguard::writeText(TextOS, Report, Lines);
  for (auto Write : {&ddpguard::writeJson, &ddpguard::writeSarif}) {
    std::string Json;
    llvm::raw_string_ostream OS(Json);
    Write(OS, Report, Lines);
    if (auto Parsed = llvm::json::parse(Json); !Parsed)
      fail("a report is not valid JSON", Source,
           llvm::toString(Parsed.takeError()) + "\n" + Json);
  }
  // rdjsonl: one JSON object a line, one line per finding.
  std::string Rdjsonl;
  llvm::raw_string_ostream RdOS(Rdjsonl);
  ddpguard::writeRdjsonl(RdOS, Report, Lines);
  llvm::SmallVector<llvm::StringRef> RdLines;
  llvm::StringRef(Rdjsonl).split(RdLines, '\n', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef Line : RdLines) {
    auto Parsed = llvm::json::parse(Line);
    if (!Parsed)
      fail("an rdjsonl line is not valid JSON", Source,
           llvm::toString(Parsed.takeError()) + "\n" + Rdjsonl);
    if (!Parsed->getAsObject())
      fail("an rdjsonl line is not a JSON object", Source, Rdjsonl);
  }
  if (RdLines.size() != Report.Findings.size() + Report.CompilerWarnings.size())
    fail("rdjsonl has not one line per finding", Source, Rdjsonl);
}

/// The main file's fixes of all findings, as `--fix` merges them.
std::string applyFixes(const CheckResult &Result, const std::string &File,
                       llvm::StringRef Source) {
  tooling::Replacements All;
  for (const ClangTidyError &E : Result.Findings)
    for (const auto &[Path, Replacements] : E.Message.Fix)
      for (const tooling::Replacement &R : Replacements) {
        if (R.getFilePath() != File)
          continue;
        if (R.getOffset() + R.getLength() > Source.size())
          fail("a fix reaches past the end of the file", Source,
               R.toString());
        // Two findings may carry the same edit (one construction fixed for
        // both); a different overlapping edit is a conflict, as in --fix.
        if (llvm::Error Err = All.add(R)) {
          llvm::consumeError(std::move(Err));
          return "";
        }
      }
  if (All.empty())
    return "";
  auto Fixed = tooling::applyAllReplacements(Source, All);
  if (!Fixed)
    fail("the fixes do not apply", Source, llvm::toString(Fixed.takeError()));
  return *Fixed;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  if (Size > 16 * 1024)
    return -1;
  llvm::StringRef Source(reinterpret_cast<const char *>(Data), Size);
  Workspace &W = workspace();
  writeFile(W.Input, Source);
  for (llvm::StringRef Mode : {"broadcast", "fuse", "once-per-backward"}) {
    CheckResult Result = check(W.Input, Mode);
    ddpguard::RunReport Report;
    for (const clang::tidy::ClangTidyError &F : Result.Findings)
      Report.Findings.emplace_back(F);
    checkReports(Report, Source);
    if (!Result.CompileErrors.empty())
      continue;
    std::string Fixed = applyFixes(Result, W.Input, Source);
    if (Fixed.empty())
      continue;
    writeFile(W.Fixed, Fixed);
    CheckResult Again = check(W.Fixed, Mode);
    if (!Again.CompileErrors.empty())
      fail(("the " + Mode + " fix made a file that compiled fail to compile")
               .str(),
           Source, "fixed text:\n" + Fixed + "\nfirst error: " +
                       Again.CompileErrors.front());
  }
  return 0;
}
