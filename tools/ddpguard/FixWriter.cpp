//===- FixWriter.cpp ------------------------------------------------------===//

#include "FixWriter.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

using namespace llvm;

namespace ddpguard {

void FixWriter::collect(const clang::tidy::ClangTidyError &Finding,
                        std::vector<FileProblem> &Errors) {
  // Take a finding's fix whole or not at all, so no file is half-fixed.
  std::map<std::string, clang::tooling::Replacements> Candidate = Fixes;
  for (const auto &[File, Replacements] : Finding.Message.Fix)
    for (const clang::tooling::Replacement &R : Replacements) {
      clang::tooling::Replacements &Into = Candidate[R.getFilePath().str()];
      bool Duplicate = llvm::any_of(Into, [&](const clang::tooling::Replacement &E) {
        return E == R;
      });
      if (Duplicate)
        continue;
      if (Error Err = Into.add(R)) {
        consumeError(std::move(Err));
        Errors.push_back({R.getFilePath().str(),
                          "fix for '" + Finding.Message.Message.substr(0, 60) +
                              "...' overlaps another fix; not applied"});
        return;
      }
    }
  Fixes = std::move(Candidate);
}

Error writeAtomically(StringRef File, StringRef Contents) {
  sys::fs::file_status Status;
  if (std::error_code EC = sys::fs::status(File, Status))
    return createStringError(EC, "cannot stat '%s': %s", File.str().c_str(),
                             EC.message().c_str());
  SmallString<256> Temporary;
  int FD;
  if (std::error_code EC = sys::fs::createUniqueFile(
          File + ".ddpguard-%%%%%%", FD, Temporary, sys::fs::OF_None,
          Status.permissions()))
    return createStringError(EC, "cannot create a temporary file next to '%s': %s",
                             File.str().c_str(), EC.message().c_str());
  {
    raw_fd_ostream OS(FD, /*shouldClose=*/true);
    OS << Contents;
    OS.flush();
    if (OS.has_error()) {
      sys::fs::remove(Temporary);
      return createStringError(OS.error(), "cannot write '%s'",
                               Temporary.c_str());
    }
  }
  sys::fs::setPermissions(Temporary, Status.permissions());
  if (std::error_code EC = sys::fs::rename(Temporary, File)) {
    sys::fs::remove(Temporary);
    return createStringError(EC, "cannot replace '%s': %s", File.str().c_str(),
                             EC.message().c_str());
  }
  return Error::success();
}

std::vector<std::string> FixWriter::write(std::vector<FileProblem> &Errors) {
  std::vector<std::string> Written;
  for (const auto &[File, Replacements] : Fixes) {
    sys::fs::file_status Status;
    if (std::error_code EC = sys::fs::status(File, Status)) {
      Errors.push_back({File, "cannot fix: " + EC.message()});
      continue;
    }
    // Root may write anything; the permission bits say what the user meant.
    const auto AnyWrite =
        sys::fs::owner_write | sys::fs::group_write | sys::fs::others_write;
    if ((Status.permissions() & AnyWrite) == 0) {
      Errors.push_back({File, "cannot fix: the file is read-only; left intact"});
      continue;
    }
    if (Status.getLastModificationTime() > RunStart) {
      Errors.push_back({File, "cannot fix: the file changed on disk since it "
                              "was read; left intact"});
      continue;
    }
    auto Buffer = MemoryBuffer::getFile(File);
    if (!Buffer) {
      Errors.push_back({File, "cannot fix: " + Buffer.getError().message()});
      continue;
    }
    std::string Original = (*Buffer)->getBuffer().str();
    Expected<std::string> Fixed =
        clang::tooling::applyAllReplacements(Original, Replacements);
    if (!Fixed) {
      Errors.push_back({File, "cannot fix: " + toString(Fixed.takeError())});
      continue;
    }
    if (*Fixed == Original)
      continue;
    if (Error Err = writeAtomically(File, *Fixed)) {
      Errors.push_back({File, toString(std::move(Err))});
      continue;
    }
    Originals[File] = std::move(Original);
    Written.push_back(File);
  }
  return Written;
}

bool FixWriter::restore(const std::string &File, std::vector<FileProblem> &Errors) {
  auto It = Originals.find(File);
  if (It == Originals.end())
    return false;
  if (Error Err = writeAtomically(File, It->second)) {
    Errors.push_back({File, "cannot restore: " + toString(std::move(Err))});
    return false;
  }
  return true;
}

} // namespace ddpguard
