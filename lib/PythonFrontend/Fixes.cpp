//===- Fixes.cpp - the out-of-place and no_sync() fixes ---------------------===//

#include "Lowering.h"

namespace ddpguard {
namespace python {
namespace detail {

using namespace model;
using llvm::StringRef;

std::string Lowering::outOfPlaceFix(const ValueWrite &Write,
                                    std::vector<Edit> &Fix) {
  std::string Written = F.text(Write.Tensor).str();
  switch (Write.WriteForm) {
  case ValueWrite::Subscript:
    return "'" + Write.Operation + "' writes part of '" + Written +
           "': no out-of-place spelling of it is offered; build the new "
           "values in a new tensor (torch.where, index_put)";
  case ValueWrite::Function:
  case ValueWrite::Module:
    return "no out-of-place spelling of '" + Write.Operation + "' is offered";
  case ValueWrite::Method:
  case ValueWrite::Augmented:
    break;
  }
  // A name this function binds itself: not a parameter (the caller's
  // tensor would keep its old values), global or nonlocal.
  bool Local = type(Write.Tensor) == "identifier";
  for (TSNode Parameter : S.Parameters)
    Local &= F.text(Parameter) != Written;
  bool Bound = false;
  uint32_t WriteStart = ts_node_start_byte(Write.Node);
  std::optional<unsigned> MadeAt;
  for (TSNode A : S.Bindings) {
    if (type(A) != "assignment" || ts_node_start_byte(A) >= WriteStart)
      continue;
    TSNode Left = field(A, "left");
    bool Single = type(Left) == "identifier" && F.text(Left) == Written;
    bool Any = Single;
    forEachTarget(Left, [&](TSNode T) {
      Any |= type(T) == "identifier" && F.text(T) == Written;
    });
    Bound |= Any;
    // Made as a handle or view of another tensor (of a name: a temporary's
    // view, self.act(fc(x)), has no other handle), or from a tuple.
    TSNode Root = field(A, "right");
    for (TSNode From = Root; !isNull(From); From = sharedFrom(From))
      Root = From;
    if (Any && !MadeAt &&
        (!Single || type(Root) == "identifier" ||
         (type(Root) == "attribute" && !F.bindingKey(Root, S).empty())))
      MadeAt = positionOf(A).Line;
  }
  forEachInScope(S.Node, [&](TSNode N) {
    if (type(N) == "global_statement" || type(N) == "nonlocal_statement")
      forEachNamedChild(N, [&](TSNode Name) {
        Local &= F.text(Name) != Written;
      });
  });
  if (!Local || !Bound)
    return "'" + Written +
           "' is not a tensor variable of this function: written out of "
           "place, the tensor it names (a view, a parameter, an attribute, a "
           "global) would keep its old values";
  if (MadeAt)
    return "'" + Written + "' shares its storage with the tensor it was made "
           "from at line " + std::to_string(*MadeAt) +
           ": written out of place, that tensor would keep its old values";
  if (type(ts_node_parent(Write.Node)) != "expression_statement")
    return "the value of '" + Write.Operation +
           "' is used: written out of place, that use would change";
  // A handle to the storage taken before the write would no longer see it.
  std::optional<unsigned> SharedAt;
  forEachInScope(type(S.Node) == "module" ? S.Node : field(S.Node, "body"),
                 [&](TSNode Use) {
    if (SharedAt || type(Use) != "identifier" || F.text(Use) != Written ||
        ts_node_start_byte(Use) >= WriteStart)
      return;
    TSNode Parent = ts_node_parent(Use);
    StringRef ParentKind = type(Parent);
    if ((ParentKind == "assignment" || ParentKind == "augmented_assignment" ||
         ParentKind == "pattern_list" || ParentKind == "tuple_pattern") &&
        !(ParentKind == "assignment" &&
          ts_node_eq(field(Parent, "right"), Use)) &&
        !(ParentKind == "augmented_assignment" &&
          ts_node_eq(field(Parent, "right"), Use)))
      return; // bound or written, not aliased
    if (!usedWithoutHandle(Use))
      SharedAt = positionOf(Use).Line;
  });
  if (SharedAt)
    return "'" + Written + "' may share its storage with another tensor at "
           "line " + std::to_string(*SharedAt) +
           ": written out of place, that tensor would keep its old values";

  if (Write.WriteForm == ValueWrite::Method) {
    StringRef Method = Write.Operation;
    if (!hasOutOfPlaceTwin(Method))
      return "torch.Tensor has no '" + Method.drop_back().str() +
             "' that takes the arguments of '" + Method.str() + "'";
    TSNode Attribute = field(field(Write.Node, "function"), "attribute");
    Fix.push_back({ts_node_start_byte(Write.Tensor), 0, Written + " = "});
    Fix.push_back({ts_node_start_byte(Attribute),
                   ts_node_end_byte(Attribute) - ts_node_start_byte(Attribute),
                   Method.drop_back().str()});
    return "";
  }
  // h += y → h = h + y; parentheses where y is not one term.
  TSNode Operator = field(Write.Node, "operator");
  TSNode Operand = field(Write.Node, "right");
  StringRef OperandKind = type(Operand);
  bool Term = llvm::is_contained(
      {"identifier", "attribute", "call", "subscript",
       "parenthesized_expression", "integer", "float", "string", "true",
       "false", "none", "list", "tuple", "dictionary"},
      OperandKind);
  Fix.push_back({ts_node_start_byte(Operator),
                 ts_node_end_byte(Operator) - ts_node_start_byte(Operator),
                 "= " + Written + " " + F.text(Operator).drop_back().str()});
  if (!Term) {
    Fix.push_back({ts_node_start_byte(Operand), 0, "("});
    Fix.push_back({ts_node_end_byte(Operand), 0, ")"});
  }
  return "";
}

bool Lowering::usedWithoutHandle(TSNode Id) {
  TSNode Parent = ts_node_parent(Id);
  StringRef Kind = type(Parent);
  // h.relu_() or torch.relu_(h) as a statement: written, its value unused.
  auto InPlaceStatement = [&](TSNode Call) {
    if (type(Call) != "call" ||
        type(ts_node_parent(Call)) != "expression_statement")
      return false;
    TSNode Callee = field(Call, "function");
    return type(Callee) == "attribute" &&
           isInPlaceOp(F.text(field(Callee, "attribute")));
  };
  if (Kind == "binary_operator" || Kind == "comparison_operator" ||
      Kind == "unary_operator" || Kind == "boolean_operator" ||
      Kind == "not_operator")
    return true;
  // h.sum(), h.shape, h.size(0): a new tensor or no tensor.
  if (Kind == "attribute" && ts_node_eq(field(Parent, "object"), Id)) {
    StringRef Attribute = F.text(field(Parent, "attribute"));
    TSNode Call = ts_node_parent(Parent);
    if (type(Call) != "call" || !ts_node_eq(field(Call, "function"), Parent))
      return llvm::is_contained({"shape", "dtype", "device", "ndim",
                                 "requires_grad", "is_cuda"},
                                Attribute);
    if (InPlaceStatement(Call))
      return true;
    if (llvm::is_contained({"size", "dim", "numel", "item", "tolist",
                            "clone"},
                           Attribute))
      return true;
    const SavedOp *Op = findSavedOp(Attribute, SavedOpForm::Method);
    return Op && Op->Result != SavedOpResult::View;
  }
  // An argument of an operation that makes a new tensor or of a module.
  if (Kind == "argument_list" || Kind == "keyword_argument") {
    TSNode Call = ts_node_parent(Kind == "keyword_argument"
                                     ? ts_node_parent(Parent)
                                     : Parent);
    if (type(Call) != "call")
      return false;
    TSNode Callee = field(Call, "function");
    std::string Name = F.qualifiedName(Callee);
    if (InPlaceStatement(Call) ||
        (StringRef(Name).starts_with("torch.") &&
         isInPlaceOp(StringRef(Name).rsplit('.').second) &&
         type(ts_node_parent(Call)) == "expression_statement"))
      return true;
    StringRef Function = Name;
    const SavedOp *Op = nullptr;
    if (Function.consume_front("torch.nn.functional."))
      Op = findSavedOp(Function, SavedOpForm::Functional);
    else if (Function.consume_front("torch.") && !Function.contains('.'))
      Op = findSavedOp(Function, SavedOpForm::Function);
    else if (type(Callee) == "attribute")
      Op = findSavedOp(F.text(field(Callee, "attribute")),
                       SavedOpForm::Method);
    if (Op)
      return Op->Result != SavedOpResult::View;
    if (llvm::is_contained({"print", "len", "float", "int", "bool",
                            "isinstance"},
                           Name))
      return true;
    return F.moduleNamed(Callee, S).has_value();
  }
  return false;
}

/// Whether N holds a statement that leaves its block early.
static bool leavesEarly(TSNode N) {
  auto Leaves = [](TSNode Statement) {
    StringRef Kind = type(Statement);
    return Kind == "return_statement" || Kind == "break_statement" ||
           Kind == "continue_statement" || Kind == "raise_statement";
  };
  bool Found = Leaves(N);
  forEachInScope(N, [&](TSNode Child) { Found |= Leaves(Child); });
  return Found;
}

std::string Frontend::noSyncFix(TSNode Statement, TSNode Later,
                                TSNode Block, TSNode LaterBlock,
                                bool SecondHasGrad, StringRef Object,
                                const Binding &Bound, Edit &Fix) const {
  // Measured (docs/python-checker.md): a forward inside no_sync() still
  // broadcasts but clears require_forward_param_sync, so the next forward
  // does not broadcast, and that forward prepares the reducer for the
  // backward. The next forward must therefore follow on every way, in grad
  // mode, before the backward.
  if (!Bound.ReducerOption.empty())
    return "the construction sets " + Bound.ReducerOption +
           ", and the reducer would then follow only the last forward's graph";
  if (!SecondHasGrad)
    return "the later forward runs without grad and would not prepare the "
           "backward's gradient synchronisation";
  if (type(Statement) != "expression_statement" ||
      type(Later) != "expression_statement")
    return "a forward is not in an expression statement of its own";
  if (ts_node_eq(Statement, Later))
    return "both forwards are in one statement";
  if (!ts_node_eq(Block, LaterBlock) ||
      (type(Block) != "block" && type(Block) != "module"))
    return "the later forward is not in the same block as the first, so it "
           "may not follow it";
  // Every statement from the first forward's to the later one's runs.
  for (TSNode N = ts_node_next_named_sibling(Statement);
       !isNull(N) && !ts_node_eq(N, Later); N = ts_node_next_named_sibling(N))
    if (leavesEarly(N))
      return "a statement between the forwards may leave the block before "
             "the later one";
  if (ts_node_start_point(Statement).row != ts_node_end_point(Statement).row)
    return "the first forward's statement spans several lines";
  // Lines end in \n, \r\n or \r, as Python reads them.
  auto IsLineBreak = [](char C) { return C == '\n' || C == '\r'; };
  uint32_t Start = ts_node_start_byte(Statement);
  size_t LineStart = Source.find_last_of("\r\n", Start);
  LineStart = LineStart == StringRef::npos ? 0 : LineStart + 1;
  StringRef Indent = Source.slice(LineStart, Start);
  StringRef Rest = Source.drop_front(ts_node_end_byte(Statement));
  StringRef After = Rest.take_until(IsLineBreak);
  StringRef LineBreak = Rest.drop_front(After.size()).starts_with("\r\n")
                            ? "\r\n"
                        : Rest.drop_front(After.size()).starts_with("\r")
                            ? "\r"
                            : "\n";
  After = After.ltrim(" \t");
  if (!Indent.ltrim(" \t").empty() ||
      !(After.empty() || After.starts_with("#")))
    return "the first forward's statement shares its line with another";
  Fix = {Start, 0,
         ("with " + Object + ".no_sync():" + LineBreak + Indent +
          (Indent.contains('\t') ? "\t" : "    "))
             .str()};
  return "";
}

} // namespace detail
} // namespace python
} // namespace ddpguard
