//===- PythonInputFuzzer.cpp - libFuzzer over the Python frontend ---------===//
//
// Each input is the text of up to three Python files of one run, separated
// by lines "#--- next file ---" (pkg/a.py, pkg/b.py, pkg/c.py, so that their
// imports of one another resolve). They are parsed, lowered and analysed
// together on the oldest supported torch and on the first whose DDP keeps
// the buffers' versions, with the frontend built with AddressSanitizer.
// Beyond "no crash", every run checks what users rely on:
//  - every position lies inside its file;
//  - every fix's edits lie inside the file and do not overlap;
//  - a file the parser read without error still parses without error once
//    any one of its fixes is applied.
//
//===----------------------------------------------------------------------===//

#include "PythonFrontend/PythonFrontend.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

using namespace ddpguard;
using namespace ddpguard::python;

namespace {

const char Separator[] = "\n#--- next file ---\n";

[[noreturn]] void fail(const std::string &What) {
  llvm::errs() << "fuzz: " << What << "\n";
  std::abort();
}

void expectInside(const Position &At, llvm::StringRef Source,
                  const char *What) {
  if (At.Line != 0 && At.Offset > Source.size())
    fail(std::string(What) + " lies past the end of its file");
}

/// The file with Edits applied, or a failure when they do not apply.
std::string applied(llvm::StringRef Source, std::vector<Edit> Edits) {
  llvm::sort(Edits,
             [](const Edit &A, const Edit &B) { return A.Offset < B.Offset; });
  std::string Out;
  size_t At = 0;
  for (const Edit &E : Edits) {
    if (E.Offset < At || E.Offset + E.Length > Source.size())
      fail("a fix's edits overlap or reach past the end of the file");
    Out += Source.slice(At, E.Offset);
    Out += E.Text;
    At = E.Offset + E.Length;
  }
  Out += Source.drop_front(At);
  return Out;
}

void expectFixParses(llvm::StringRef Source, const std::vector<Edit> &Edits,
                     const RuleSet &Rules, const CheckOptions &Options,
                     const char *What) {
  if (Edits.empty())
    return;
  std::string Fixed = applied(Source, Edits);
  if (!checkSource(Fixed, Rules, Options).SyntaxErrors.empty())
    fail(std::string("the ") + What + " fix gives a syntax error:\n" + Fixed);
}

void checkRun(const std::vector<llvm::StringRef> &Texts,
              const char *Version) {
  static const RuleSet Rules = RuleSet::builtin();
  CheckOptions Options;
  Options.Version = *TorchVersion::parse(Version);
  std::vector<SourceFile> Files;
  for (size_t I = 0; I < Texts.size(); ++I)
    Files.push_back(
        {"/fuzz/pkg/" + std::string(1, char('a' + I)) + ".py", Texts[I],
         Options});
  std::vector<CheckResult> Results = checkSources(Files, Rules);
  if (Results.size() != Files.size())
    fail("not one result per file");
  for (size_t I = 0; I < Files.size(); ++I) {
    llvm::StringRef Source = Texts[I];
    const CheckResult &R = Results[I];
    for (const Position &At : R.SyntaxErrors)
      expectInside(At, Source, "a syntax error");
    bool Parsed = R.SyntaxErrors.empty() && !R.TooDeep;
    for (const Finding &F : R.Findings) {
      for (const Position &At : {F.First, F.Second, F.Backward})
        expectInside(At, Source, "a finding");
      if (Parsed && F.NoSyncWithheld.empty() && !F.NoSyncFix.Text.empty())
        expectFixParses(Source, {F.NoSyncFix}, Rules, Options, "no_sync");
      if (Parsed && F.ConstructionFile == Files[I].Path &&
          !F.BroadcastFix.Text.empty())
        expectFixParses(Source, {F.BroadcastFix}, Rules, Options,
                        "broadcast");
    }
    for (const StepFinding &F : R.Steps)
      for (const Position &At : {F.Step, F.Forward, F.Backward})
        expectInside(At, Source, "a step finding");
    for (const ValueWriteFinding &F : R.ValueWrites) {
      for (const Position &At : {F.Write, F.Saved, F.Backward})
        expectInside(At, Source, "an in-place write finding");
      if (Parsed)
        expectFixParses(Source, F.Fix, Rules, Options, "out-of-place");
    }
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  llvm::StringRef Input(reinterpret_cast<const char *>(Data), Size);
  std::vector<llvm::StringRef> Texts;
  while (Texts.size() < 2) {
    auto [File, Rest] = Input.split(Separator);
    if (File.size() == Input.size())
      break;
    Texts.push_back(File);
    Input = Rest;
  }
  Texts.push_back(Input);
  checkRun(Texts, "2.11.0");
  checkRun(Texts, "2.12.1");
  return 0;
}
