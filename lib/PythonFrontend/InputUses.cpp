//===- InputUses.cpp - what a module's forward does first with its input --===//
//
// `identity = self.shortcut(x); x = self.body(x)` fails when the body's
// first layer is an in-place ReLU and the shortcut's a convolution, which
// saved x: a module call writes or saves its input as the first statement
// of its forward that reads the input does (through nn.Sequential's first
// layer, add_module, factories and classes of the run).
//
//===----------------------------------------------------------------------===//

#include "Frontend.h"

namespace ddpguard {
namespace python {
namespace detail {

using llvm::StringRef;

bool Frontend::mentions(TSNode N, StringRef Name) const {
  bool Found = false;
  if (isNull(N)) // `x: int` assigns nothing
    return false;
  walkIteratively(N, [&](TSNode Node, unsigned) {
    if (type(Node) == "identifier" && text(Node) == Name) {
      Found = true;
      return Walk::Stop;
    }
    return Walk::Enter;
  });
  return Found;
}

bool Frontend::inPlaceKeyword(TSNode Call) const {
  bool InPlace = false;
  forEachNamedChild(field(Call, "arguments"), [&](TSNode A) {
    InPlace |= type(A) == "keyword_argument" &&
               text(field(A, "name")) == "inplace" &&
               type(field(A, "value")) == "true";
  });
  return InPlace;
}

Frontend::InputUse Frontend::firstInputUse(TSNode N, const Scope &S,
                                           unsigned Depth) {
  if (Depth > 4 || (type(N) != "identifier" && type(N) != "attribute"))
    return InputUse::Unknown;
  if (inPlaceModules().count(text(N)))
    return InputUse::Writes;
  for (const Value &V : valuesOf(N, S)) {
    if (type(V.Node) != "call")
      continue;
    InputUse Use = V.In->Owner->constructionInputUse(V.Node, *V.In, Depth + 1);
    // An empty nn.Sequential filled by add_module: its first layer.
    if (Use == InputUse::Unknown &&
        V.In->Owner->qualifiedName(field(V.Node, "function")) ==
            "torch.nn.Sequential" &&
        ts_node_named_child_count(field(V.Node, "arguments")) == 0) {
      std::string Adder = (text(N) + ".add_module").str();
      for (TSNode B : V.In->Bindings)
        if (type(B) == "call" && V.In->Owner->text(field(B, "function")) == Adder) {
          TSNode Layer = namedChild(field(B, "arguments"), 1);
          if (type(Layer) == "call")
            Use = V.In->Owner->constructionInputUse(Layer, *V.In, Depth + 1);
          break;
        }
    }
    if (Use != InputUse::Unknown)
      return Use;
  }
  return InputUse::Unknown;
}

Frontend::InputUse Frontend::constructionInputUse(TSNode Call, const Scope &S,
                                                  unsigned Depth) {
  if (Depth > 4)
    return InputUse::Unknown;
  for (const Value &V : throughFactories({{Call, &S}})) {
    if (type(V.Node) != "call")
      continue;
    Frontend &In = *V.In->Owner;
    std::string Class = In.constructedClass(V.Node, *V.In);
    if (StringRef(Class).starts_with("torch.nn.")) {
      if (savesInput(Class))
        return InputUse::Saves;
      if (In.inPlaceKeyword(V.Node))
        return InputUse::Writes;
      if (Class == "torch.nn.Sequential") {
        TSNode First = namedChild(field(V.Node, "arguments"), 0);
        if (type(First) == "call")
          return In.constructionInputUse(First, *V.In, Depth + 1);
        if (type(First) == "identifier" || type(First) == "attribute")
          return In.firstInputUse(First, *V.In, Depth + 1);
      }
      continue;
    }
    // A class of the run: its forward.
    const Scope *Init = In.calledFunctionByName(field(V.Node, "function"), *V.In);
    if (!Init || isNull(Init->Class) || !StringRef(Init->Name).ends_with(".__init__"))
      continue;
    for (const auto &Method : Init->Owner->Scopes)
      if (ts_node_eq(Method->Class, Init->Class) && !Method->Parent &&
          StringRef(Method->Name).ends_with(".forward"))
        return Init->Owner->forwardInputUse(*Method, Depth + 1);
  }
  return InputUse::Unknown;
}

Frontend::InputUse Frontend::forwardInputUse(const Scope &Forward,
                                             unsigned Depth) {
  auto [Known, New] = ForwardInputUses.try_emplace(Forward.Node.id);
  if (!New)
    return Known->second;
  if (Forward.Parameters.size() < 2 || type(Forward.Parameters[1]) != "identifier")
    return InputUse::Unknown;
  StringRef Input = text(Forward.Parameters[1]);
  // The first statement that reads the input; a leading `if` that does not
  // test it (`if self.activate: x = self.activ(x)`) may be that statement.
  std::function<std::optional<InputUse>(TSNode)> First =
      [&](TSNode Block) -> std::optional<InputUse> {
    std::optional<InputUse> Use;
    forEachNamedChild(Block, [&](TSNode Statement) {
      if (Use || type(Statement) == "comment" ||
          !mentions(Statement, Input))
        return;
      if (type(Statement) == "if_statement" &&
          !mentions(field(Statement, "condition"), Input)) {
        Use = First(field(Statement, "consequence"));
        return;
      }
      Use = InputUse::Unknown;
      TSNode E = type(Statement) == "expression_statement"
                     ? namedChild(Statement, 0)
                     : Statement;
      if (type(E) == "augmented_assignment" &&
          text(field(E, "left")) == Input) {
        Use = InputUse::Writes;
        return;
      }
      if (type(E) == "assignment")
        E = field(E, "right");
      if (type(E) != "call")
        return;
      TSNode Callee = field(E, "function");
      TSNode Argument = namedChild(field(E, "arguments"), 0);
      if (type(Callee) == "attribute" && text(field(Callee, "object")) == Input &&
          isInPlaceOp(text(field(Callee, "attribute"))))
        Use = InputUse::Writes;
      else if (type(Argument) == "identifier" && text(Argument) == Input) {
        if (StringRef(qualifiedName(Callee)).starts_with("torch."))
          Use = inPlaceKeyword(E) ? InputUse::Writes : InputUse::Unknown;
        else
          Use = firstInputUse(Callee, Forward, Depth + 1);
      }
    });
    return Use;
  };
  InputUse Use = First(field(Forward.Node, "body")).value_or(InputUse::Unknown);
  ForwardInputUses[Forward.Node.id] = Use;
  return Use;
}

} // namespace detail
} // namespace python
} // namespace ddpguard
