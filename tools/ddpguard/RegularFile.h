//===- RegularFile.h - Read a file only when it is a regular one ----------===//
//
// A FIFO, a socket or a link to /dev/zero named train.py or pyproject.toml
// must not hang the run: the file is opened without blocking (O_NONBLOCK),
// and only read when fstat of that open file says it is a regular file, so
// that nothing swapped in between a walk's look and the read gets read. The
// bytes are copied, not mapped: a file truncated while it is read must not
// end the process with SIGBUS.
//
//===----------------------------------------------------------------------===//

#ifndef DDPGUARD_TOOLS_REGULARFILE_H
#define DDPGUARD_TOOLS_REGULARFILE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/MemoryBuffer.h"
#include <memory>
#include <string>
#include <system_error>

namespace ddpguard {

struct RegularFileRead {
  /// The content; null when the file was not read.
  std::unique_ptr<llvm::MemoryBuffer> Buffer;
  /// Why it could not be opened or read.
  std::error_code Error;
  /// What it is when it is no regular file ("a FIFO"); empty otherwise.
  std::string NotRegular;

  explicit operator bool() const { return Buffer != nullptr; }
  bool missing() const { return Error == std::errc::no_such_file_or_directory; }
  /// "cannot read: Permission denied", "not read: it is a FIFO, not a
  /// regular file".
  std::string problem() const;
};

RegularFileRead readRegularFile(llvm::StringRef Path);

/// "a FIFO", "a character device", ... for a mode_t's file type; empty for a
/// regular file.
std::string nonRegularKind(unsigned Mode);

} // namespace ddpguard

#endif
