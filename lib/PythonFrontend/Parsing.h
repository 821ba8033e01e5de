//===- Parsing.h - Python source to tree-sitter tree, within limits --------===//
//
// The pinned grammar (tree-sitter-python 0.23.6; 0.25.0's sdist ships no
// external scanner) lacks some spellings of Python 3.12 to 3.14. Where a
// parse fails on one of them, the parser reads the text with it rewritten to
// a spelling it knows, byte for byte the same length, so that every offset,
// line and column is the source's. The frontend itself reads the source.
//
//===----------------------------------------------------------------------===//

#ifndef DDPGUARD_PYTHONFRONTEND_PARSING_H
#define DDPGUARD_PYTHONFRONTEND_PARSING_H

#include "PythonFrontend.h"
#include "llvm/ADT/StringRef.h"
#include <memory>
#include <optional>
#include <tree_sitter/api.h>

namespace ddpguard {
namespace python {
namespace detail {

using TreePtr = std::unique_ptr<TSTree, void (*)(TSTree *)>;

struct ParsedFile {
  TreePtr Tree{nullptr, ts_tree_delete};
  /// The first node deeper than MaxNestingDepth, when there is one: the
  /// frontend's walks recurse, so such a file is not analysed.
  std::optional<Position> TooDeep;
};

ParsedFile parsePython(TSParser *Parser, llvm::StringRef Source);

} // namespace detail
} // namespace python
} // namespace ddpguard

#endif
