//===- Syntax.cpp - tree-sitter's Python tree, read safely ------------------===//

#include "Syntax.h"
#include "llvm/ADT/DenseMap.h"
#include <cstring>

namespace ddpguard {
namespace python {
namespace detail {

TSNode field(TSNode N, const char *Name) {
  if (isNull(N))
    return N;
  thread_local llvm::DenseMap<const char *, TSFieldId> Ids;
  auto [It, Inserted] = Ids.try_emplace(Name, 0);
  if (Inserted)
    It->second = ts_language_field_id_for_name(tree_sitter_python(), Name,
                                               std::strlen(Name));
  return ts_node_child_by_field_id(N, It->second);
}

/// The parameter names of a function or lambda, in order.
std::vector<TSNode> parameterNames(TSNode Function) {
  std::vector<TSNode> Names;
  forEachNamedChild(field(Function, "parameters"), [&](TSNode P) {
    TSNode Name = P;
    if (type(P) != "identifier") {
      Name = field(P, "name");
      if (isNull(Name) && type(P) == "typed_parameter")
        Name = namedChild(P, 0);
    }
    Names.push_back(Name);
  });
  return Names;
}

Position positionOf(TSNode N) {
  TSPoint P = ts_node_start_point(N);
  return {P.row + 1, P.column + 1, ts_node_start_byte(N)};
}

void collectErrors(TSNode N, std::vector<Position> &Errors) {
  walkIteratively(N, [&](TSNode Node, unsigned) {
    if (!ts_node_has_error(Node))
      return Walk::Skip;
    if (ts_node_is_error(Node) || ts_node_is_missing(Node)) {
      Errors.push_back(positionOf(Node));
      return Walk::Skip;
    }
    return Walk::Enter;
  });
}

} // namespace detail
} // namespace python
} // namespace ddpguard
