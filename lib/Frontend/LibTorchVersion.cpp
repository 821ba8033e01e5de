//===- LibTorchVersion.cpp ------------------------------------------------===//

#include "LibTorchVersion.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Lex/HeaderSearch.h"
#include "clang/Lex/MacroInfo.h"
#include "clang/Lex/Preprocessor.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Regex.h"

using namespace clang;

namespace ddpguard {
namespace clangfe {

static const char *const MacroNames[] = {
    "TORCH_VERSION_MAJOR", "TORCH_VERSION_MINOR", "TORCH_VERSION_PATCH"};

/// Where LibTorch defines the macros (2.11 on: the second, which the first
/// includes).
static const StringRef VersionHeaders[] = {"torch/version.h",
                                           "torch/headeronly/version.h"};

/// How a note names the file that defines the macros.
static std::string whereDefined(StringRef File) {
  for (StringRef Header : VersionHeaders)
    if (File == Header || File.ends_with(("/" + Header).str()))
      return ("<" + Header + ">").str();
  return File.str();
}

/// The integer a macro of the translation unit is defined to, and where.
static std::optional<unsigned> macroValue(Preprocessor &PP, StringRef Name,
                                          SourceLocation &At) {
  const MacroInfo *Macro = PP.getMacroInfo(PP.getIdentifierInfo(Name));
  if (!Macro || Macro->getNumTokens() != 1 ||
      !Macro->getReplacementToken(0).is(tok::numeric_constant))
    return std::nullopt;
  unsigned Value;
  if (StringRef(PP.getSpelling(Macro->getReplacementToken(0)))
          .getAsInteger(10, Value))
    return std::nullopt;
  At = Macro->getDefinitionLoc();
  return Value;
}

static std::optional<JudgedVersion> fromMacros(Preprocessor &PP) {
  unsigned Numbers[3];
  SourceLocation At;
  for (unsigned I = 0; I < 3; ++I) {
    std::optional<unsigned> Value = macroValue(PP, MacroNames[I], At);
    if (!Value)
      return std::nullopt;
    Numbers[I] = *Value;
  }
  JudgedVersion Judged;
  Judged.Version = {Numbers[0], Numbers[1], Numbers[2]};
  Judged.From = JudgedVersion::Source::Header;
  PresumedLoc Presumed = PP.getSourceManager().getPresumedLoc(At);
  Judged.Where = whereDefined(Presumed.isValid() ? Presumed.getFilename() : "");
  return Judged;
}

/// <torch/version.h> on the include path, when the translation unit does
/// not include it (a file that includes only <torch/nn.h>).
static std::optional<JudgedVersion> fromIncludePath(Preprocessor &PP) {
  for (StringRef Header : llvm::reverse(VersionHeaders)) {
    ConstSearchDirIterator CurDir = nullptr;
    OptionalFileEntryRef File = PP.getHeaderSearchInfo().LookupFile(
        Header, SourceLocation(), /*isAngled=*/true, nullptr, &CurDir, {},
        nullptr, nullptr, nullptr, nullptr, nullptr, nullptr);
    if (!File)
      continue;
    auto Buffer = PP.getFileManager().getBufferForFile(*File);
    if (!Buffer)
      continue;
    unsigned Numbers[3];
    bool Defined = true;
    for (unsigned I = 0; I < 3 && Defined; ++I) {
      llvm::Regex Define(std::string("#[ \t]*define[ \t]+") + MacroNames[I] +
                         "[ \t]+([0-9]+)");
      llvm::SmallVector<StringRef, 2> Match;
      Defined = Define.match((*Buffer)->getBuffer(), &Match) &&
                !Match[1].getAsInteger(10, Numbers[I]);
    }
    if (!Defined)
      continue;
    JudgedVersion Judged;
    Judged.Version = {Numbers[0], Numbers[1], Numbers[2]};
    Judged.From = JudgedVersion::Source::Header;
    Judged.Where = ("<" + Header + "> on the include path").str();
    return Judged;
  }
  return std::nullopt;
}

JudgedVersion judgeVersion(Preprocessor &PP,
                           std::optional<TorchVersion> Override) {
  if (Override) {
    JudgedVersion Judged;
    Judged.Version = *Override;
    Judged.From = JudgedVersion::Source::Option;
    return Judged;
  }
  if (std::optional<JudgedVersion> Judged = fromMacros(PP))
    return *Judged;
  if (std::optional<JudgedVersion> Judged = fromIncludePath(PP))
    return *Judged;
  return JudgedVersion();
}

std::string JudgedVersion::describe() const {
  std::string Text = "LibTorch " + Version.str();
  switch (From) {
  case Source::Option:
    return Text + ", from the TorchVersion option";
  case Source::Header:
    return Text + ", from " + Where;
  case Source::Assumed:
    break;
  }
  return Text + ", assumed: no TORCH_VERSION_MAJOR/MINOR/PATCH is defined "
                "and no <torch/version.h> is on the include path; set the "
                "TorchVersion option to judge by another";
}

} // namespace clangfe
} // namespace ddpguard
