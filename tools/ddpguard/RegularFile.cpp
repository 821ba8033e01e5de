//===- RegularFile.cpp ----------------------------------------------------===//

#include "RegularFile.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include <cerrno>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace llvm;

namespace ddpguard {

std::string nonRegularKind(unsigned Mode) {
  switch (Mode & S_IFMT) {
  case S_IFREG:
    return "";
  case S_IFIFO:
    return "a FIFO";
  case S_IFCHR:
    return "a character device";
  case S_IFBLK:
    return "a block device";
  case S_IFSOCK:
    return "a socket";
  case S_IFDIR:
    return "a directory";
  default:
    return "not a regular file";
  }
}

std::string RegularFileRead::problem() const {
  if (!NotRegular.empty())
    return "not read: it is " + NotRegular + ", not a regular file";
  return "cannot read: " + Error.message();
}

RegularFileRead readRegularFile(StringRef Path) {
  RegularFileRead Result;
  SmallString<256> Name(Path);
  int FD = ::open(Name.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (FD < 0) {
    Result.Error = std::error_code(errno, std::generic_category());
    return Result;
  }
  struct stat Status;
  if (::fstat(FD, &Status) != 0) {
    Result.Error = std::error_code(errno, std::generic_category());
  } else if (!S_ISREG(Status.st_mode)) {
    Result.NotRegular = nonRegularKind(Status.st_mode);
  } else {
    ErrorOr<std::unique_ptr<MemoryBuffer>> Buffer = MemoryBuffer::getOpenFile(
        sys::fs::convertFDToNativeFile(FD), Path, /*FileSize=*/-1,
        /*RequiresNullTerminator=*/true, /*IsVolatile=*/true);
    if (Buffer)
      Result.Buffer = std::move(*Buffer);
    else
      Result.Error = Buffer.getError();
  }
  ::close(FD);
  return Result;
}

} // namespace ddpguard
