//===- PythonCheck.cpp ----------------------------------------------------===//

#include "PythonCheck.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

using namespace llvm;

namespace ddpguard {

clang::tooling::DiagnosticMessage message(const std::string &Text,
                                          const std::string &File,
                                          unsigned Offset) {
  clang::tooling::DiagnosticMessage Message(Text);
  Message.FilePath = File;
  Message.FileOffset = Offset;
  return Message;
}

bool suppressed(StringRef Text, unsigned Offset, StringRef Check) {
  size_t End = Text.find('\n', Offset);
  StringRef Line = Text.slice(Text.rfind('\n', Offset) + 1,
                              End == StringRef::npos ? Text.size() : End);
  for (size_t Hash = Line.find('#'); Hash != StringRef::npos;
       Hash = Line.find('#', Hash + 1)) {
    StringRef Rest = Line.drop_front(Hash + 1).ltrim(" \t");
    if (!Rest.starts_with_insensitive("noqa"))
      continue;
    Rest = Rest.drop_front(4);
    StringRef Codes = Rest.ltrim(" \t");
    if (!Codes.consume_front(":")) {
      // `# noqa`, `# noqa  # why`; not `# noqanything`.
      if (Rest.empty() || isSpace(Rest.front()) || Rest.front() == '#')
        return true;
      continue;
    }
    SmallVector<StringRef, 4> Items;
    SplitString(Codes, Items, ", \t\r");
    if (llvm::any_of(Items, [&](StringRef Code) {
          return Code.equals_insensitive(Check);
        }))
      return true;
  }
  return false;
}

} // namespace ddpguard
