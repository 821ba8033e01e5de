//===- ConfigInputFuzzer.cpp - libFuzzer over the configuration reader ----===//
//
// Each input is the text of a configuration file: the first byte picks
// which (pyproject.toml's [tool.ddpguard], or a .ddpguard), the rest is its
// content, written into a fresh folder with a Python file beside it. The
// reader (tools/ddpguard/PythonConfig.cpp, toml++ underneath) must neither
// crash nor hang, and every error it reports must name the file it read.
//
//===----------------------------------------------------------------------===//

#include "PythonConfig.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"
#include <cstdint>
#include <cstdlib>
#include <string>

using namespace ddpguard;

namespace {

[[noreturn]] void fail(const std::string &What) {
  llvm::errs() << "fuzz: " << What << "\n";
  std::abort();
}

std::string freshFolder() {
  llvm::SmallString<128> Dir;
  if (llvm::sys::fs::createUniqueDirectory("ddpguard-config-fuzz", Dir))
    fail("cannot create a work folder");
  return std::string(Dir);
}

void write(const std::string &Path, llvm::StringRef Text) {
  std::error_code EC;
  llvm::raw_fd_ostream OS(Path, EC);
  if (EC)
    fail("cannot write " + Path);
  OS << Text;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  if (Size == 0)
    return 0;
  llvm::StringRef Input(reinterpret_cast<const char *>(Data) + 1, Size - 1);
  bool Pyproject = Data[0] % 2 == 0;
  std::string Dir = freshFolder();
  std::string Config = Dir + (Pyproject ? "/pyproject.toml" : "/.ddpguard");
  write(Config, Pyproject ? ("[tool.ddpguard]\n" + Input).str() : Input.str());
  write(Dir + "/train.py", "");
  {
    PythonConfigs Configs;
    (void)Configs.reports(Dir + "/train.py",
                          "ddp-multiple-forward-before-backward");
    (void)Configs.excluded(Dir + "/train.py");
    (void)Configs.excludedWithFolders(Dir + "/train.py");
    for (const FileProblem &Problem : Configs.takeErrors())
      if (Problem.File != Config)
        fail("an error names " + Problem.File + ", not " + Config);
  }
  llvm::sys::fs::remove_directories(Dir);
  return 0;
}
