//===- PythonCheckBench.cpp - The Python check over a parse alone ---------===//
//
// ddpguard-python-bench [--runs N] FILE...: reads the files once, then N
// times parses each with tree-sitter alone (the baseline) and checks each
// (parse, lowering, analysis), interleaved; prints the best total of each
// and their ratio. bench/python/run.py drives it.
//
//===----------------------------------------------------------------------===//

#include "PythonFrontend/PythonFrontend.h"
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
  std::vector<std::unique_ptr<llvm::MemoryBuffer>> Files;
  for (int I = 1; I < argc; ++I) {
    if (!std::strcmp(argv[I], "--runs") && I + 1 < argc) {
      Runs = std::max(1, std::atoi(argv[++I]));
      continue;
    }
    auto Buffer = llvm::MemoryBuffer::getFile(argv[I]);
    if (!Buffer) {
      llvm::errs() << argv[I] << ": " << Buffer.getError().message() << "\n";
      return 2;
    }
    Files.push_back(std::move(*Buffer));
  }
  if (Files.empty()) {
    llvm::errs() << "usage: ddpguard-python-bench [--runs N] FILE...\n";
    return 2;
  }
  RuleSet Rules = RuleSet::builtin();
  python::CheckOptions Options;
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
    for (const auto &File : Files)
      Findings += python::checkSource(File->getBuffer(), Rules, Options)
                      .Findings.size();
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
