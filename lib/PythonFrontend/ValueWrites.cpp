//===- ValueWrites.cpp - tensors' storage, saving operations, in-place writes ---===//

#include "Lowering.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include <functional>

namespace ddpguard {
namespace python {
namespace detail {

using namespace model;
using llvm::StringRef;

bool Lowering::writesInPlace() {
  // Storage is followed only where something may write a tensor in place:
  // measured, following it in every scope that backpropagates made the
  // check of torch's distributed.py 3.7 times slower (93 ms against 25 ms).
  // The text says first: a syntactic scan of every scope cost a sixth of
  // the instructions of checking bench/python's generated script.
  StringRef Text = F.text(S.Node);
  bool InPlaceModules = !F.inPlaceModules().empty();
  // A call of a module that writes its input in place (a block whose
  // forward starts with an in-place ReLU): asked only in a file that says
  // inplace=True, and only of calls in a module's forward.
  bool InputWriters = IsModuleForward && F.mayWriteInputsInPlace();
  auto SubscriptAssigned = [&] {
    for (size_t At = Text.find(']'); At != StringRef::npos;
         At = Text.find(']', At + 1)) {
      StringRef After = Text.drop_front(At + 1).ltrim(" \t");
      if (After.starts_with("=") && !After.starts_with("=="))
        return true;
    }
    return false;
  };
  if (!InPlaceModules && !InputWriters && !Text.contains("_(") &&
      !Text.contains("inplace") &&
      llvm::none_of(llvm::ArrayRef<StringRef>{"+=", "-=", "*=", "/=", "%=",
                                              "&=", "|=", "^=", ">>=", "<<="},
                    [&](StringRef Op) { return Text.contains(Op); }) &&
      !SubscriptAssigned())
    return false;
  bool Found = false;
  forEachInScope(type(S.Node) == "module" ? S.Node : field(S.Node, "body"),
                 [&](TSNode N) {
    if (Found)
      return;
    StringRef Kind = type(N);
    if (Kind == "augmented_assignment") {
      Found = F.text(field(N, "operator")) != "@=";
    } else if (Kind == "assignment") {
      forEachTarget(field(N, "left"), [&](TSNode T) {
        Found |= type(T) == "subscript";
      });
    } else if (Kind == "call") {
      TSNode Callee = field(N, "function");
      StringRef Name = type(Callee) == "attribute"
                           ? F.text(field(Callee, "attribute"))
                           : F.text(Callee);
      Found = isInPlaceOp(Name) ||
              F.text(field(N, "arguments")).contains("inplace") ||
              (InPlaceModules && !inPlaceModule(Callee).empty()) ||
              (InputWriters && (type(Callee) == "attribute" ||
                                type(Callee) == "identifier") &&
               F.firstInputUse(Callee, S) == Frontend::InputUse::Writes);
    }
  });
  return Found;
}

std::vector<Lowering::CarriedState> Lowering::carriedState() {
  std::vector<CarriedState> Found;
  TSNode Body = field(S.Node, "body");
  if (isNull(Body) || !F.text(Body).contains("return"))
    return Found;
  llvm::StringSet<> Returned, Written;
  std::vector<TSNode> Assignments;
  // `return V, [Si, Zi]`: the names in the returned tuples and lists.
  std::function<void(TSNode)> Returns = [&](TSNode E) {
    StringRef Kind = type(E);
    if (Kind == "identifier")
      Returned.insert(F.text(E));
    else if (Kind == "tuple" || Kind == "list" || Kind == "expression_list" ||
             Kind == "parenthesized_expression")
      forEachNamedChild(E, Returns);
  };
  forEachInScope(Body, [&](TSNode N) {
    StringRef Kind = type(N);
    if (Kind == "return_statement") {
      forEachNamedChild(N, Returns);
    } else if (Kind == "augmented_assignment") {
      TSNode Left = field(N, "left");
      if (type(Left) == "identifier" && F.text(field(N, "operator")) != "@=")
        Written.insert(F.text(Left));
    } else if (Kind == "call") {
      TSNode Callee = field(N, "function");
      if (type(Callee) == "attribute" &&
          type(field(Callee, "object")) == "identifier" &&
          isInPlaceOp(F.text(field(Callee, "attribute"))))
        Written.insert(F.text(field(Callee, "object")));
    } else if (Kind == "assignment") {
      Assignments.push_back(N);
    }
  });
  // A name rebound to a transform of its own value (`x = self.conv1(x)`,
  // item 11's loop-carried names) holds a new tensor each call, not the
  // state it was given: measured, timm's ResNet blocks are not state.
  llvm::StringSet<> Transformed;
  for (TSNode A : Assignments)
    forEachTarget(field(A, "left"), [&](TSNode T) {
      if (type(T) == "identifier" && F.mentions(field(A, "right"), F.text(T)))
        Transformed.insert(F.text(T));
    });
  auto Carries = [&](StringRef Name) {
    return Returned.count(Name) && Written.count(Name) &&
           !Transformed.count(Name);
  };
  for (TSNode Parameter : S.Parameters) {
    StringRef Name = F.text(Parameter);
    if (type(Parameter) != "identifier" || Name == "self")
      continue;
    CarriedState State{Name.str(), {}};
    if (Carries(Name))
      State.Names.push_back(Name.str());
    for (TSNode A : Assignments) {
      TSNode Right = field(A, "right");
      if (type(Right) != "identifier" || F.text(Right) != Name)
        continue;
      forEachTarget(field(A, "left"), [&](TSNode T) {
        if (type(T) == "identifier" && Carries(F.text(T)))
          State.Names.push_back(F.text(T).str());
      });
    }
    if (!State.Names.empty())
      Found.push_back(std::move(State));
  }
  return Found;
}

TSNode Lowering::sharedFrom(TSNode N) {
  StringRef Kind = type(N);
  if (Kind == "parenthesized_expression")
    return namedChild(N, 0);
  if (Kind == "subscript")
    return field(N, "value");
  if (Kind == "attribute") {
    StringRef Attribute = F.text(field(N, "attribute"));
    if (Attribute == "T" || Attribute == "mT" || Attribute == "H" ||
        Attribute == "mH")
      return field(N, "object");
    return TSNode{};
  }
  if (Kind != "call")
    return TSNode{};
  TSNode Callee = field(N, "function");
  TSNode Arguments = field(N, "arguments");
  std::string Name = F.qualifiedName(Callee);
  if (StringRef(Name).starts_with("torch.")) {
    // torch.transpose(x, 0, 1), torch.relu_(x), F.relu(x, inplace=True).
    StringRef Function = StringRef(Name).rsplit('.').second;
    const SavedOp *Op = findSavedOp(Function, SavedOpForm::Function);
    bool InPlace = isInPlaceOp(Function);
    forEachNamedChild(Arguments, [&](TSNode A) {
      if (type(A) == "keyword_argument" && F.text(field(A, "name")) == "inplace")
        InPlace |= type(field(A, "value")) == "true";
    });
    if (InPlace || (Op && Op->Result == SavedOpResult::View))
      return namedChild(Arguments, 0);
    return TSNode{};
  }
  if (type(Callee) == "attribute" &&
      !F.Imports.count(Name.substr(0, Name.find('.')))) {
    StringRef Method = F.text(field(Callee, "attribute"));
    if (isViewMethod(Method) || isInPlaceOp(Method))
      return field(Callee, "object");
  }
  // einops.rearrange(x, ...) returns a view of x where the pattern allows.
  if (Name == "einops.rearrange" || !inPlaceModule(Callee).empty())
    return namedChild(Arguments, 0);
  return TSNode{};
}

std::optional<ValueId> Lowering::storageSource(TSNode N) {
  if (isNull(N))
    return std::nullopt;
  if (auto It = OpResults.find(N.id); It != OpResults.end())
    return It->second;
  StringRef Kind = type(N);
  if (Kind == "identifier" || Kind == "attribute") {
    std::string Key = F.bindingKey(N, S);
    if (!Key.empty()) {
      if (!Names.count(Key) && F.Imports.count(Key))
        return std::nullopt;
      return valueOf(Key);
    }
  }
  TSNode From = sharedFrom(N);
  if (isNull(From))
    return std::nullopt;
  return storageSource(From);
}

const SavedOp *Lowering::savingOpOf(TSNode N,
                                    llvm::SmallVectorImpl<TSNode> &Operands,
                                    llvm::SmallVectorImpl<TSNode> &Others) {
  const SavedOp *Op = nullptr;
  if (type(N) == "binary_operator") {
    StringRef Operator = F.text(field(N, "operator"));
    if (Operator == "*")
      Op = findSavedOp("operator*", SavedOpForm::Any);
    else if (Operator == "/")
      Op = findSavedOp("operator/", SavedOpForm::Any);
    else if (Operator == "@")
      Op = findSavedOp("matmul", SavedOpForm::Any);
    else if (Operator == "**")
      Op = findSavedOp("pow", SavedOpForm::Any);
    // A product or quotient with a Python number saves no tensor: the
    // gradient is the number times the incoming one.
    if ((Operator == "*" || Operator == "/") &&
        (F.isPythonValue(field(N, "left"), S) ||
         F.isPythonValue(field(N, "right"), S)))
      Op = nullptr;
    Operands.push_back(field(N, "left"));
    Operands.push_back(field(N, "right"));
  } else if (type(N) == "call") {
    TSNode Callee = field(N, "function");
    std::string Name = F.qualifiedName(Callee);
    StringRef Function = StringRef(Name);
    if (Function.consume_front("torch.nn.functional."))
      Op = findSavedOp(Function, SavedOpForm::Functional);
    else if (Function.consume_front("torch.") && !Function.contains('.'))
      Op = findSavedOp(Function, SavedOpForm::Function);
    else if (type(Callee) == "attribute" &&
             !F.Imports.count(Name.substr(0, Name.find('.')))) {
      Op = findSavedOp(F.text(field(Callee, "attribute")), SavedOpForm::Method);
      Operands.push_back(field(Callee, "object"));
    }
    forEachNamedChild(field(N, "arguments"), [&](TSNode A) {
      if (type(A) == "keyword_argument" &&
          F.text(field(A, "name")) == "inplace" &&
          type(field(A, "value")) == "true")
        Op = nullptr; // a write, not a new tensor
      if (type(A) == "keyword_argument" || type(A) == "comment")
        Others.push_back(A);
      else
        Operands.push_back(A);
    });
  }
  if (!Op || Op->Result != SavedOpResult::New || Op->Saves.empty()) {
    Operands.clear();
    Others.clear();
    return nullptr;
  }
  return Op;
}

Lowering::Values Lowering::savingOp(TSNode N, const SavedOp &Op,
                                    llvm::ArrayRef<TSNode> Operands,
                                    llvm::ArrayRef<TSNode> Others) {
  std::vector<Values> OperandValues;
  Values All;
  for (TSNode Operand : Operands) {
    OperandValues.push_back(expression(Operand));
    All.append(OperandValues.back().begin(), OperandValues.back().end());
  }
  for (TSNode Other : Others) {
    Values From = expression(Other);
    All.append(From.begin(), From.end());
  }
  ValueId Output = Graph.addValue();
  SiteId Site = site(N);
  Event E = Event::op(Site, GradEnabled, Output, All, newStorage());
  for (const SaveRule &Rule : saveRules(Op.Saves)) {
    Save Saved;
    for (unsigned Trigger : Rule.Triggers)
      if (Trigger < OperandValues.size())
        Saved.IfRequiresGrad.append(OperandValues[Trigger].begin(),
                                    OperandValues[Trigger].end());
    // An operand without history never requires grad.
    if (Saved.IfRequiresGrad.empty())
      continue;
    if (!Rule.Operand)
      Saved.StorageOf = Output;
    else if (*Rule.Operand < Operands.size())
      Saved.StorageOf = storageSource(Operands[*Rule.Operand]);
    if (Saved.StorageOf)
      E.Saves.push_back(std::move(Saved));
  }
  Graph.append(Current, std::move(E));
  OpResults[N.id] = Output;
  SavingOps[Site] = N;
  return {Output};
}

void Lowering::valueWrite(ValueWrite::Form Form, TSNode Node, TSNode Tensor,
                          std::string Operation) {
  // `lam *= 0.5` on a float, `outs[k] = y` into a dict: no tensor is written.
  TSNode Container = Tensor;
  while (type(Container) == "subscript")
    Container = field(Container, "value");
  if (type(Container) == "identifier" && F.isPythonValue(Container, S))
    return;
  std::optional<ValueId> Through = storageSource(Tensor);
  if (!Through)
    return;
  SiteId Site = site(Form == ValueWrite::Method
                         ? field(field(Node, "function"), "attribute")
                         : Node);
  Graph.append(Current, Event::write(Site, WriteKind::InPlace, {}, {*Through}));
  ValueWrites[Site] = {Form, Node, Tensor, std::move(Operation)};
}

void Lowering::silentWrite(TSNode N, TSNode Written, bool ThroughData,
                           std::string Operation) {
  TSNode Tensor = ThroughData ? field(Written, "object") : Written;
  // Measured (test/python/silent/data_write_unsaved_param.py and the
  // layers' backwards on 2.11.0): no node of Linear, Conv, LayerNorm or
  // BatchNorm reads its bias, so writing one changes no gradient.
  if (type(Tensor) == "attribute" &&
      F.text(field(Tensor, "attribute")) == "bias")
    return;
  // A gradient (p.grad.data.zero_()) is saved by no forward.
  for (TSNode Part = Tensor;
       type(Part) == "attribute" || type(Part) == "subscript";
       Part = field(Part, type(Part) == "attribute" ? "object" : "value"))
    if (type(Part) == "attribute" &&
        F.text(field(Part, "attribute")) == "grad")
      return;
  // A loop variable is named by the modules it runs over; `model.fc.weight`
  // names itself.
  std::vector<std::string> Keys = iteratedParameters(Tensor);
  std::vector<std::string> Names;
  for (const std::string &Key : Keys)
    Names.push_back(displayName(Key));
  // model.fc.weight names a part; model[2].weight the module it indexes.
  for (TSNode Part = Tensor; Keys.empty() && !isNull(Part);
       Part = type(Part) == "attribute"   ? field(Part, "object")
              : type(Part) == "subscript" ? field(Part, "value")
                                          : TSNode{})
    if (std::optional<std::string> Key = F.moduleOrPartKey(Part, S))
      Keys.push_back(*Key);
  llvm::SmallVector<TensorSetId, 2> Sets;
  for (const std::string &Key : Keys) {
    for (TensorSetId Set : overlappingParameters(Key))
      if (!llvm::is_contained(Sets, Set))
        Sets.push_back(Set);
  }
  SiteId Site = site(field(field(N, "function"), "attribute"));
  if (Sets.empty()) {
    std::optional<ValueId> Through = storageSource(Tensor);
    if (!Through)
      return;
    Graph.append(Current, Event::write(Site, WriteKind::InPlace, {}, {*Through},
                                       /*Silent=*/true));
  } else {
    Graph.append(Current, Event::write(Site, WriteKind::InPlace, Sets, {},
                                       /*Silent=*/true));
  }
  SilentWrites[Site] = {ThroughData
                            ? SilentWriteFinding::Way::Data
                            : SilentWriteFinding::Way::PreservedVersionCounter,
                        std::move(Operation), F.text(Tensor).str(),
                        llvm::join(Names, ", "), Sets.empty()};
}

std::vector<std::string> Lowering::iteratedParameters(TSNode Tensor) {
  if (type(Tensor) != "identifier")
    return {};
  StringRef Name = F.text(Tensor);
  for (TSNode Loop = ts_node_parent(Tensor);
       !isNull(Loop) && !ts_node_eq(Loop, S.Node);
       Loop = ts_node_parent(Loop)) {
    if (type(Loop) != "for_statement")
      continue;
    TSNode Left = field(Loop, "left");
    TSNode Right = field(Loop, "right");
    if (type(Left) == "identifier") {
      if (F.text(Left) == Name)
        return F.parameterSources(Right, S);
      continue;
    }
    if (type(Left) != "pattern_list" && type(Left) != "tuple_pattern")
      continue;
    // `for n, p in D.named_parameters()`, `for p, q in zip(A..., B...)`.
    unsigned Index = 0, At = ~0u, Count = 0;
    forEachNamedChild(Left, [&](TSNode Part) {
      if (type(Part) == "identifier" && F.text(Part) == Name)
        At = Index;
      ++Index;
    });
    Count = Index;
    if (At == ~0u || type(Right) != "call")
      continue;
    TSNode Callee = field(Right, "function");
    TSNode Arguments = field(Right, "arguments");
    if (type(Callee) == "attribute" &&
        F.text(field(Callee, "attribute")) == "named_parameters" &&
        Count == 2 && At == 1) {
      if (std::optional<std::string> Key =
              F.moduleOrPartKey(field(Callee, "object"), S))
        return {*Key};
      return {};
    }
    if (F.qualifiedName(Callee) == "zip")
      return F.parameterSources(namedChild(Arguments, At), S);
    return {};
  }
  return {};
}

std::optional<ValueId> Lowering::savesItsResult(TSNode N, TSNode Written,
                                                StringRef Base,
                                                SavedOpForm Form) {
  const SavedOp *Op = findSavedOp(Base, Form);
  if (!Op || !llvm::any_of(saveRules(Op->Saves),
                           [](const SaveRule &R) { return !R.Operand; }))
    return std::nullopt;
  std::optional<ValueId> Through = storageSource(Written);
  if (!Through)
    return std::nullopt;
  ValueId Output = Graph.addValue();
  Event E{Event::Kind::Op};
  E.Site = site(N);
  E.GradEnabled = GradEnabled;
  E.Target = Output;
  E.Sources = {*Through};
  E.StorageOf = *Through;
  Save Saved;
  Saved.IfRequiresGrad = {*Through};
  Saved.StorageOf = Output;
  E.Saves.push_back(std::move(Saved));
  SavingOps[E.Site] = N;
  Graph.append(Current, std::move(E));
  OpResults[N.id] = Output;
  // A backward through the written tensor now runs through the operation.
  std::string Key = F.bindingKey(Written, S);
  if (!Key.empty() && !F.Imports.count(Key))
    Graph.append(Current, Event::derive(valueOf(Key), {Output},
                                        /*Strong=*/false));
  return Output;
}


void Lowering::saveOutput(Event &Forward, TSNode N, TSNode Callee,
                          const Values &Inputs) {
  std::string Key = F.bindingKey(Callee, S);
  if (Key.empty())
    return;
  // Asked once per name: each asking scans the scope's assignments.
  auto [Known, Inserted] = OutputSaves.try_emplace(Key);
  if (Inserted)
    Known->second = savesItsOutput(Callee);
  std::optional<bool> Always = Known->second;
  if (!Always || (!*Always && Inputs.empty()))
    return;
  Save Saved;
  Saved.StorageOf = Forward.Target;
  if (!*Always)
    Saved.IfRequiresGrad.assign(Inputs.begin(), Inputs.end());
  Forward.Saves.push_back(std::move(Saved));
  SavingOps[Forward.Site] = N;
}

std::optional<bool> Lowering::savesItsOutput(TSNode Callee, unsigned Depth) {
  for (TSNode Right : F.assignedTo(Callee, S)) {
    // DDP(net) forwards what net's forward returns.
    if (F.constructedWrapper(Right)) {
      Right = namedChild(field(Right, "arguments"), 0);
      if ((type(Right) == "identifier" || type(Right) == "attribute") &&
          Depth < 4)
        return savesItsOutput(Right, Depth + 1);
    }
    if (type(Right) != "call")
      continue;
    std::string Class = F.qualifiedName(field(Right, "function"));
    if (savesOutput(Class))
      return false;
    if (Class != "torch.nn.Sequential")
      continue;
    // The last layer's output is the container's; after other layers
    // (with parameters, as a rule) it is saved whatever the input.
    TSNode Last{};
    unsigned Layers = 0;
    forEachNamedChild(field(Right, "arguments"), [&](TSNode A) {
      if (type(A) != "comment" && type(A) != "keyword_argument") {
        Last = A;
        ++Layers;
      }
    });
    if (type(Last) == "call" &&
        savesOutput(F.qualifiedName(field(Last, "function"))))
      return Layers > 1;
  }
  return std::nullopt;
}

std::string Lowering::inPlaceModule(TSNode Callee) {
  if (type(Callee) != "identifier" && type(Callee) != "attribute")
    return "";
  // By the name as written: a file rarely binds one name to two modules.
  auto Known = F.inPlaceModules().find(F.text(Callee));
  return Known == F.inPlaceModules().end() ? "" : Known->second;
}

const llvm::StringMap<std::string> &Frontend::inPlaceModules() {
  if (InPlaceModules)
    return *InPlaceModules;
  InPlaceModules.emplace();
  // Measured: asking each scope's assignments per call (assignedTo scans a
  // class for self attributes) was a fifth of the check of torch's
  // distributed.py.
  if (!Source.contains("inplace"))
    return *InPlaceModules;
  std::function<void(TSNode)> Walk = [&](TSNode N) {
    if (type(N) == "assignment") {
      TSNode Right = field(N, "right");
      std::string Class = qualifiedName(field(Right, "function"));
      bool InPlace = false;
      if (type(Right) == "call" && StringRef(Class).starts_with("torch.nn."))
        forEachNamedChild(field(Right, "arguments"), [&](TSNode A) {
          InPlace |= type(A) == "keyword_argument" &&
                     text(field(A, "name")) == "inplace" &&
                     type(field(A, "value")) == "true";
        });
      if (InPlace)
        forEachTarget(field(N, "left"), [&](TSNode Target) {
          (*InPlaceModules)[text(Target)] = Class;
        });
    }
    forEachNamedChild(N, Walk);
  };
  Walk(ts_tree_root_node(Tree));
  return *InPlaceModules;
}

} // namespace detail
} // namespace python
} // namespace ddpguard
