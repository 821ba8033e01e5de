//===- Syntax.h - tree-sitter's Python tree, read safely --------------------===//
//
// Accessors that take the null nodes of a tree with errors, and walks of a
// scope's own nodes.
//
//===----------------------------------------------------------------------===//

#ifndef DDPGUARD_PYTHONFRONTEND_SYNTAX_H
#define DDPGUARD_PYTHONFRONTEND_SYNTAX_H

#include "PythonFrontend.h"
#include "llvm/ADT/StringRef.h"
#include <tree_sitter/api.h>
#include <vector>

extern "C" const TSLanguage *tree_sitter_python(void);

namespace ddpguard {
namespace python {
namespace detail {

using llvm::StringRef;

// A missing field is a null node, which tree-sitter's accessors do not take:
// in a tree with errors any field may be missing.
inline bool isNull(TSNode N) { return ts_node_is_null(N); }
inline StringRef type(TSNode N) { return isNull(N) ? "" : ts_node_type(N); }
/// Names are string literals: their ids are looked up once per thread (by
/// name, tree-sitter compares every field name; measured, 5% of a check).
TSNode field(TSNode N, const char *Name);
inline TSNode namedChild(TSNode N, uint32_t I) {
  return isNull(N) || I >= ts_node_named_child_count(N)
             ? TSNode{}
             : ts_node_named_child(N, I);
}
template <typename Fn> void forEachNamedChild(TSNode N, Fn Each) {
  if (isNull(N))
    return;
  uint32_t Count = ts_node_named_child_count(N);
  // ts_node_named_child(N, I) walks the children before I, so a loop over
  // a long body is quadratic; a cursor walks each child once. Measured: the
  // walks were a quarter of checking timm's folder. A cursor costs an
  // allocation, which a node of a few children does not repay.
  if (Count <= 4) {
    for (uint32_t I = 0; I < Count; ++I)
      Each(ts_node_named_child(N, I));
    return;
  }
  TSTreeCursor Cursor = ts_tree_cursor_new(N);
  if (ts_tree_cursor_goto_first_child(&Cursor)) {
    do {
      TSNode Child = ts_tree_cursor_current_node(&Cursor);
      if (ts_node_is_named(Child))
        Each(Child);
    } while (ts_tree_cursor_goto_next_sibling(&Cursor));
  }
  ts_tree_cursor_delete(&Cursor);
}
/// Calls Each(node) for every node of N's subtree that belongs to N's own
/// scope: nested functions, lambdas and classes are scopes of their own.
template <typename Fn> void forEachInScope(TSNode N, Fn Each) {
  forEachNamedChild(N, [&](TSNode Child) {
    StringRef Kind = type(Child);
    if (Kind == "function_definition" || Kind == "class_definition" ||
        Kind == "lambda" || Kind == "decorated_definition")
      return;
    Each(Child);
    forEachInScope(Child, Each);
  });
}

/// The targets an assignment's left side binds: names, self attributes.
template <typename Fn> void forEachTarget(TSNode Left, Fn Each) {
  StringRef Kind = type(Left);
  if (Kind == "pattern_list" || Kind == "tuple_pattern" ||
      Kind == "list_pattern" || Kind == "tuple" || Kind == "list" ||
      Kind == "parenthesized_expression") {
    forEachNamedChild(Left, [&](TSNode Child) { forEachTarget(Child, Each); });
    return;
  }
  Each(Left);
}

/// Calls Each(node) for every node of the methods of a class.
template <typename Fn> void forEachInScopeOfClass(TSNode Class, Fn Each) {
  forEachNamedChild(field(Class, "body"), [&](TSNode Member) {
    if (type(Member) == "decorated_definition")
      Member = field(Member, "definition");
    if (type(Member) == "function_definition")
      forEachInScope(field(Member, "body"), Each);
  });
}

enum class Walk { Enter, Skip, Stop };
/// Visits Root's subtree in preorder without recursion, as deep trees need:
/// Visit(node, depth below Root) says whether to enter the node's children,
/// skip them, or stop.
template <typename Fn> void walkIteratively(TSNode Root, Fn Visit) {
  TSTreeCursor Cursor = ts_tree_cursor_new(Root);
  unsigned Depth = 0;
  for (;;) {
    Walk Next = Visit(ts_tree_cursor_current_node(&Cursor), Depth);
    if (Next == Walk::Stop)
      break;
    if (Next == Walk::Enter && ts_tree_cursor_goto_first_child(&Cursor)) {
      ++Depth;
      continue;
    }
    bool Done = false;
    while (!Done && !ts_tree_cursor_goto_next_sibling(&Cursor)) {
      Done = Depth == 0 || !ts_tree_cursor_goto_parent(&Cursor);
      --Depth;
    }
    if (Done)
      break;
  }
  ts_tree_cursor_delete(&Cursor);
}

/// The parameter names of a function or lambda, in order.
std::vector<TSNode> parameterNames(TSNode Function);

Position positionOf(TSNode N);
/// Where the parser met text it could not read.
void collectErrors(TSNode N, std::vector<Position> &Errors);

} // namespace detail
} // namespace python
} // namespace ddpguard

#endif
