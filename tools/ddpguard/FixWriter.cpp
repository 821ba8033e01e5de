//===- FixWriter.cpp ------------------------------------------------------===//

#include "FixWriter.h"
#include "PythonFiles.h"
#include "clang/Format/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/xxhash.h"
#include <sys/stat.h>
#include <unistd.h>

using namespace llvm;

namespace ddpguard {

ContentStamp ContentStamp::of(StringRef Contents) {
  return {Contents.size(), xxh3_64bits(Contents)};
}

void ContentStamps::record(StringRef RealPath, ContentStamp Stamp) {
  std::lock_guard<std::mutex> Guard(Lock);
  auto [It, Inserted] = Stamps.try_emplace(RealPath.str(), Stamp);
  // Read twice with different contents: no stamp can be trusted.
  if (!Inserted && It->second && !(*It->second == Stamp))
    It->second.reset();
}

std::optional<ContentStamp> ContentStamps::lookup(StringRef RealPath) const {
  std::lock_guard<std::mutex> Guard(Lock);
  auto It = Stamps.find(RealPath);
  if (It == Stamps.end())
    return std::nullopt;
  return It->second;
}

std::string resolvedPath(StringRef Path) {
  SmallString<256> Real;
  if (sys::fs::real_path(Path, Real))
    return Path.str();
  return std::string(Real);
}

namespace {

/// Stamps the buffer the front end gets, which is what it parses.
class RecordingFile : public vfs::File {
public:
  RecordingFile(std::unique_ptr<vfs::File> Inner, std::string RealPath,
                ContentStamps &Stamps)
      : Inner(std::move(Inner)), RealPath(std::move(RealPath)),
        Stamps(Stamps) {}
  ErrorOr<vfs::Status> status() override { return Inner->status(); }
  ErrorOr<std::string> getName() override { return Inner->getName(); }
  ErrorOr<std::unique_ptr<MemoryBuffer>>
  getBuffer(const Twine &Name, int64_t FileSize, bool RequiresNullTerminator,
            bool IsVolatile) override {
    auto Buffer =
        Inner->getBuffer(Name, FileSize, RequiresNullTerminator, IsVolatile);
    if (Buffer)
      Stamps.record(RealPath, ContentStamp::of((*Buffer)->getBuffer()));
    return Buffer;
  }
  std::error_code close() override { return Inner->close(); }

private:
  std::unique_ptr<vfs::File> Inner;
  std::string RealPath;
  ContentStamps &Stamps;
};

class RecordingFileSystem : public vfs::ProxyFileSystem {
public:
  RecordingFileSystem(IntrusiveRefCntPtr<vfs::FileSystem> Base,
                      ContentStamps &Stamps)
      : ProxyFileSystem(std::move(Base)), Stamps(Stamps) {}
  ErrorOr<std::unique_ptr<vfs::File>>
  openFileForRead(const Twine &Path) override {
    auto File = ProxyFileSystem::openFileForRead(Path);
    if (!File)
      return File;
    SmallString<256> Real;
    if (getRealPath(Path, Real)) {
      Real.clear();
      Path.toVector(Real);
      makeAbsolute(Real);
    }
    return std::unique_ptr<vfs::File>(std::make_unique<RecordingFile>(
        std::move(*File), std::string(Real), Stamps));
  }

private:
  ContentStamps &Stamps;
};

Error writeError(std::error_code EC, const Twine &What, StringRef File) {
  return createStringError(EC, "cannot %s '%s': %s", What.str().c_str(),
                           File.str().c_str(), EC.message().c_str());
}

/// Overwrites File's own inode: truncation is avoided until the new contents
/// are written, and the data is flushed to disk before returning.
Error writeInPlace(StringRef File, StringRef Contents) {
  int FD;
  if (std::error_code EC = sys::fs::openFileForWrite(
          File, FD, sys::fs::CD_OpenExisting, sys::fs::OF_None))
    return writeError(EC, "open", File);
  raw_fd_ostream OS(FD, /*shouldClose=*/false);
  OS << Contents;
  OS.flush();
  std::error_code EC = OS.error();
  OS.clear_error();
  if (!EC)
    EC = sys::fs::resize_file(FD, Contents.size());
  if (!EC && ::fsync(FD) != 0)
    EC = std::error_code(errno, std::generic_category());
  ::close(FD);
  if (EC)
    return writeError(EC, "write", File);
  return Error::success();
}

} // namespace

IntrusiveRefCntPtr<vfs::FileSystem>
recordingFileSystem(IntrusiveRefCntPtr<vfs::FileSystem> Base,
                    ContentStamps &Stamps) {
  return makeIntrusiveRefCnt<RecordingFileSystem>(std::move(Base), Stamps);
}

// Two ways to replace a file's contents, and the trade-off between them:
//
// - A temporary file next to it, given its permissions, owner and group, then
//   renamed over it. Atomic: a reader, or a crash, sees the old file or the
//   new one, never half of one. But the name then points at a new inode, so
//   this is only right when nothing else refers to the old one.
// - Writing the file's own inode in place. Not atomic (a crash in the middle
//   can leave it half written; restore() keeps the original in memory for the
//   rest of the run), but the only way to keep what the inode carries:
//   another hard link to it, which a rename would leave with the old
//   contents, and an owner that we may not give to a new file (someone
//   else's file, when we are not root).
//
// So: rename where the file has one link and its owner carries over, in place
// otherwise. Symbolic links never reach here: the caller resolves them, so
// the link stays a link and its target is fixed.
Error writeContents(StringRef File, StringRef Contents) {
  sys::fs::file_status Status;
  if (std::error_code EC = sys::fs::status(File, Status))
    return writeError(EC, "stat", File);
  if (Status.getLinkCount() > 1)
    return writeInPlace(File, Contents);

  SmallString<256> Temporary;
  int FD;
  if (std::error_code EC = sys::fs::createUniqueFile(
          File + ".ddpguard-%%%%%%", FD, Temporary, sys::fs::OF_None,
          Status.permissions()))
    return createStringError(EC,
                             "cannot create a temporary file next to '%s': %s",
                             File.str().c_str(), EC.message().c_str());
  auto Discard = [&] {
    ::close(FD);
    sys::fs::remove(Temporary);
  };
  bool SameOwner = Status.getUser() == ::geteuid() &&
                   Status.getGroup() == ::getegid();
  if (!SameOwner && ::fchown(FD, Status.getUser(), Status.getGroup()) != 0) {
    // The owner would change: keep the inode instead.
    Discard();
    return writeInPlace(File, Contents);
  }
  {
    raw_fd_ostream OS(FD, /*shouldClose=*/false);
    OS << Contents;
    OS.flush();
    if (OS.has_error()) {
      std::error_code EC = OS.error();
      OS.clear_error();
      Discard();
      return writeError(EC, "write", Temporary);
    }
  }
  // createUniqueFile applies the umask; the file's own bits win.
  if (::fchmod(FD, Status.permissions()) != 0 || ::fsync(FD) != 0) {
    std::error_code EC(errno, std::generic_category());
    Discard();
    return writeError(EC, "write", Temporary);
  }
  ::close(FD);
  if (std::error_code EC = sys::fs::rename(Temporary, File)) {
    sys::fs::remove(Temporary);
    return writeError(EC, "replace", File);
  }
  return Error::success();
}

void FixWriter::collect(const clang::tidy::ClangTidyError &Finding,
                        std::vector<FileProblem> &Errors) {
  // Take a finding's fix whole or not at all, so no file is half-fixed.
  std::map<std::string, clang::tooling::Replacements> Candidate = Fixes;
  for (const auto &[File, Replacements] : Finding.Message.Fix)
    for (const clang::tooling::Replacement &Original : Replacements) {
      std::string Real = resolvedPath(Original.getFilePath());
      clang::tooling::Replacement R(Real, Original.getOffset(),
                                    Original.getLength(),
                                    Original.getReplacementText());
      clang::tooling::Replacements &Into = Candidate[Real];
      bool Duplicate = llvm::any_of(
          Into, [&](const clang::tooling::Replacement &E) { return E == R; });
      if (Duplicate)
        continue;
      if (Error Err = Into.add(R)) {
        consumeError(std::move(Err));
        Errors.push_back({Real, "fix for '" +
                                    Finding.Message.Message.substr(0, 60) +
                                    "...' overlaps another fix; not applied"});
        return;
      }
    }
  Fixes = std::move(Candidate);
}

std::vector<std::string> FixWriter::write(std::vector<FileProblem> &Errors) {
  std::vector<std::string> Written;
  for (auto &[File, Replacements] : Fixes) {
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
    auto Buffer = MemoryBuffer::getFile(File, /*IsText=*/false,
                                        /*RequiresNullTerminator=*/false,
                                        /*IsVolatile=*/true);
    if (!Buffer) {
      Errors.push_back({File, "cannot fix: " + Buffer.getError().message()});
      continue;
    }
    std::string Original = (*Buffer)->getBuffer().str();
    // The fix's offsets are into what was parsed: write only over exactly
    // that, whatever the modification time says (it can lie both ways).
    std::optional<ContentStamp> Checked = Parsed.lookup(File);
    if (!Checked || !(*Checked == ContentStamp::of(Original))) {
      Errors.push_back({File, "cannot fix: the file changed on disk since it "
                              "was read; left intact"});
      continue;
    }
    clang::tooling::Replacements Edits = Replacements;
    // clang-format formats C++; a Python fix is written as it is.
    if (FormatStyle != "none" && !isPythonFile(File)) {
      // As clang-tidy's --format-style: clean up around the edits and format
      // the lines they touch, in the style of the file's .clang-format.
      Expected<clang::format::FormatStyle> Style =
          clang::format::getStyle(FormatStyle, File, "none", Original);
      if (!Style) {
        Errors.push_back({File, "cannot format the fix: " +
                                    toString(Style.takeError())});
        continue;
      }
      if (!Style->DisableFormat) {
        Expected<clang::tooling::Replacements> Formatted =
            clang::format::cleanupAroundReplacements(Original, Edits, *Style);
        if (Formatted)
          Formatted = clang::format::formatReplacements(Original, *Formatted,
                                                        *Style);
        if (!Formatted) {
          Errors.push_back({File, "cannot format the fix: " +
                                      toString(Formatted.takeError())});
          continue;
        }
        Edits = std::move(*Formatted);
      }
    }
    Expected<std::string> Fixed =
        clang::tooling::applyAllReplacements(Original, Edits);
    if (!Fixed) {
      Errors.push_back({File, "cannot fix: " + toString(Fixed.takeError())});
      continue;
    }
    if (*Fixed == Original)
      continue;
    if (Error Err = writeContents(File, *Fixed)) {
      Errors.push_back({File, toString(std::move(Err))});
      continue;
    }
    WrittenStamps[File] = ContentStamp::of(*Fixed);
    Originals[File] = std::move(Original);
    Written.push_back(File);
  }
  return Written;
}

Expected<std::string> FixWriter::fixedText(StringRef File,
                                           StringRef Text) const {
  auto It = Fixes.find(resolvedPath(File));
  if (It == Fixes.end())
    return Text.str();
  return clang::tooling::applyAllReplacements(Text, It->second);
}

std::vector<std::string> FixWriter::fixedFiles() const {
  std::vector<std::string> Files;
  for (const auto &Entry : Fixes)
    Files.push_back(Entry.first);
  return Files;
}

bool FixWriter::restore(const std::string &File,
                        std::vector<FileProblem> &Errors) {
  auto It = Originals.find(File);
  if (It == Originals.end())
    return false;
  // Put back only over what we wrote.
  auto Buffer = MemoryBuffer::getFile(File, /*IsText=*/false,
                                      /*RequiresNullTerminator=*/false,
                                      /*IsVolatile=*/true);
  if (!Buffer ||
      !(ContentStamp::of((*Buffer)->getBuffer()) == WrittenStamps[File])) {
    Errors.push_back({File, "cannot restore: the file changed on disk after "
                            "it was fixed"});
    return false;
  }
  if (Error Err = writeContents(File, It->second)) {
    Errors.push_back({File, "cannot restore: " + toString(std::move(Err))});
    return false;
  }
  return true;
}

} // namespace ddpguard
