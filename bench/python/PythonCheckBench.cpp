//===- PythonCheckBench.cpp - The Python check over a parse alone ---------===//
//
// ddpguard-python-bench [--runs N] [--together] FILE... [:: FILE...]...:
// reads the files once, then N times parses each with tree-sitter alone (the
// baseline) and checks them (parse, lowering, analysis), interleaved; prints
// the best total of each and their ratio. Each file is checked alone, or with
// --together each group (files between `::`, a repository's) as one run,
// imports followed between its files, as the CLI checks a folder.
// bench/python/run.py drives it.
//
//===----------------------------------------------------------------------===//

#include "PythonFrontend/PythonFrontend.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"
#include <tree_sitter/api.h>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

extern "C" const TSLanguage *tree_sitter_python(void);

using namespace ddpguard;
using Clock = std::chrono::steady_clock;

int main(int argc, char **argv) {
  unsigned Runs = 5;
  bool Together = false;
  std::vector<std::unique_ptr<llvm::MemoryBuffer>> Files;
  std::vector<std::string> Paths;
  // Where each group of files starts in Files.
  std::vector<size_t> Groups{0};
  for (int I = 1; I < argc; ++I) {
    if (!std::strcmp(argv[I], "--runs") && I + 1 < argc) {
      Runs = std::max(1, std::atoi(argv[++I]));
      continue;
    }
    if (!std::strcmp(argv[I], "--together")) {
      Together = true;
      continue;
    }
    if (!std::strcmp(argv[I], "::")) {
      Groups.push_back(Files.size());
      continue;
    }
    llvm::SmallString<256> Absolute(argv[I]);
    llvm::sys::fs::make_absolute(Absolute);
    Paths.push_back(Absolute.str().str());
    auto Buffer = llvm::MemoryBuffer::getFile(argv[I]);
    if (!Buffer) {
      llvm::errs() << argv[I] << ": " << Buffer.getError().message() << "\n";
      return 2;
    }
    Files.push_back(std::move(*Buffer));
  }
  if (Files.empty()) {
    llvm::errs() << "usage: ddpguard-python-bench [--runs N] [--together] "
                    "FILE... [:: FILE...]...\n";
    return 2;
  }
  Groups.push_back(Files.size());
  RuleSet Rules = RuleSet::builtin();
  python::CheckOptions Options;
  std::vector<std::vector<python::SourceFile>> Projects;
  for (size_t G = 0; G + 1 < Groups.size(); ++G) {
    Projects.emplace_back();
    for (size_t F = Groups[G]; F < Groups[G + 1]; ++F)
      Projects.back().push_back({Paths[F], Files[F]->getBuffer(), Options});
  }
  TSParser *Parser = ts_parser_new();
  ts_parser_set_language(Parser, tree_sitter_python());
  double BestParse = 1e30, BestCheck = 1e30;
  size_t Findings = 0;
  for (unsigned Run = 0; Run < Runs; ++Run) {
    auto Start = Clock::now();
    for (const auto &File : Files) {
      llvm::StringRef Text = File->getBuffer();
      ts_tree_delete(
          ts_parser_parse_string(Parser, nullptr, Text.data(), Text.size()));
    }
    auto Parsed = Clock::now();
    Findings = 0;
    if (Together) {
      for (const auto &Project : Projects)
        for (const python::CheckResult &Result :
             python::checkSources(Project, Rules))
          Findings += Result.Findings.size() + Result.Steps.size() +
                      Result.ValueWrites.size();
    } else {
      for (const auto &File : Files) {
        python::CheckResult Result =
            python::checkSource(File->getBuffer(), Rules, Options);
        Findings += Result.Findings.size() + Result.Steps.size() +
                    Result.ValueWrites.size();
      }
    }
    auto Checked = Clock::now();
    BestParse = std::min(
        BestParse, std::chrono::duration<double>(Parsed - Start).count());
    BestCheck = std::min(
        BestCheck, std::chrono::duration<double>(Checked - Parsed).count());
  }
  ts_parser_delete(Parser);
  llvm::outs() << llvm::format("%zu files: parse %.2f ms, check %.2f ms, "
                               "check/parse %.2f (%zu findings)\n",
                               Files.size(), BestParse * 1e3, BestCheck * 1e3,
                               BestCheck / BestParse, Findings);
  return 0;
}
