//===- Lowering.cpp - statements and expressions to events ------------------===//

#include "Lowering.h"
#include "llvm/ADT/StringExtras.h"

namespace ddpguard {
namespace python {
namespace detail {

using namespace model;
using llvm::StringRef;

ValueId Lowering::valueOf(StringRef Key) {
  auto [It, Inserted] = Names.try_emplace(Key, 0);
  if (Inserted) {
    It->second = Graph.addValue();
    // Attributes of self outlive the method.
    if (Key.contains('.'))
      Graph.markEscaping(It->second);
  }
  return It->second;
}

ObjectId Lowering::objectFor(StringRef Key, const Binding &Bound) {
  auto [It, Inserted] = Objects.try_emplace(Key, 0);
  if (Inserted) {
    ObjectInfo Named = Bound.Info;
    Named.Name = Key.str();
    It->second = Graph.addObject(Named);
    ObjectNames.push_back(Key.str());
    ObjectBindings.push_back(Bound);
  }
  return It->second;
}

ValueId Lowering::forward(unsigned B, TSNode N, StringRef Key,
                          const Binding &Bound, const Values &Inputs,
                          const Frontend::ModuleInfo *Module, bool Bypass) {
  ValueId Output = Graph.addValue();
  ObjectId Object = objectFor(Key, Bound);
  Event Forward =
      Event::forward(site(N), Object, GradEnabled, Output, Inputs);
  Forward.Bypass = Bypass;
  // The model's condition follows histories of forwards only; an input
  // that any other call made may require grad too, so the buffers count as
  // saved unless every argument is one that surely does not.
  if (Bound.BuffersSavedIfInputRequiresGrad) {
    bool GradFree = true;
    forEachNamedChild(field(N, "arguments"), [&](TSNode Argument) {
      GradFree = GradFree && (type(Argument) == "comment" ||
                              F.isGradFree(Argument, S));
    });
    if (!GradFree)
      Forward.Saves.push_back(Save{Graph.object(Object).Buffers, {}});
  }
  Forward.NoSync = NoSyncObjects.count(Key);
  if (TracksValues) {
    Forward.NewStorage = newStorage();
    TSNode Callee = field(N, "function");
    if (type(Callee) == "attribute" &&
        F.text(field(Callee, "attribute")) == "forward")
      Callee = field(Callee, "object");
    saveOutput(Forward, N, Callee, Inputs);
  }
  if (Module)
    saveParameters(Forward, *Module, Inputs);
  Graph.append(B, std::move(Forward));
  return Output;
}

std::optional<bool> Lowering::gradModeOf(TSNode N) {
  if (type(N) != "call")
    return std::nullopt;
  std::string Name = F.qualifiedName(field(N, "function"));
  if (Name == "torch.no_grad" || Name == "torch.inference_mode")
    return true;
  if (Name == "torch.enable_grad")
    return false;
  if (Name == "torch.set_grad_enabled") {
    TSNode Argument = namedChild(field(N, "arguments"), 0);
    if (!isNull(Argument) && type(Argument) == "false")
      return true;
    if (isTrue(Argument))
      return false;
  }
  return std::nullopt;
}

void Lowering::saveParameters(Event &Forward,
                              const Frontend::ModuleInfo &Module,
                              const Values &Inputs) {
  using Saves = Frontend::ParameterSaves;
  if (Module.Saves == Saves::NoParameters || Module.Saves == Saves::Never ||
      (Module.Saves == Saves::IfInputRequiresGrad && Inputs.empty()))
    return;
  Save Saved{parametersOf(Module.Key), {}};
  if (Module.Saves == Saves::IfInputRequiresGrad)
    Saved.IfRequiresGrad.assign(Inputs.begin(), Inputs.end());
  Forward.Saves.push_back(std::move(Saved));
}

std::string Lowering::attributeModuleKey(TSNode Object) {
  // An instance's attribute (model.generator) may be a plain module too.
  if (type(Object) == "attribute" &&
      type(field(Object, "object")) == "identifier" &&
      !F.Imports.count(F.text(field(Object, "object"))))
    return F.text(Object).str();
  return "";
}

std::optional<ValueId> Lowering::checkpointedForward(TSNode N) {
  TSNode Arguments = field(N, "arguments");
  TSNode Function = namedChild(Arguments, 0);
  if (isNull(Function) || type(Function) == "keyword_argument")
    return std::nullopt;
  if (type(Function) == "attribute" &&
      F.text(field(Function, "attribute")) == "forward")
    Function = field(Function, "object");
  std::string Key = F.bindingKey(Function, S);
  if (Key.empty())
    Key = attributeModuleKey(Function);
  std::optional<Frontend::ModuleInfo> Module;
  if (Key.empty() || !(Module = moduleNamed(Function, Key)))
    return std::nullopt;
  Values Inputs = children(Arguments);
  Binding Plain;
  Plain.Info.BroadcastsBuffers = false;
  Plain.Info.HasBuffers = false;
  ValueId Output = Graph.addValue();
  Event Forward = Event::forward(site(N), objectFor(Key, Plain), GradEnabled,
                                 Output, Inputs);
  // Reentrant or not, checkpointing recomputes the forward in the backward
  // from the parameters as they are then (measured on 2.11.0 and 2.15.0,
  // test/python/silent/checkpoint_*).
  Forward.SavesUnderHooks = true;
  if (TracksValues)
    Forward.NewStorage = newStorage();
  saveParameters(Forward, *Module, Inputs);
  Graph.append(Current, std::move(Forward));
  if (TracksValues)
    OpResults[N.id] = Output;
  return Output;
}

void Lowering::run() {
  StringRef Text = F.text(S.Node);
  // Steps and backwards in the functions the scope calls count too.
  const FunctionEffects &Effects = F.effectsOf(S);
  // A write through .data steps parameters as an optimizer does.
  TracksSteps = (Effects.Steps || Text.contains(".data.") ||
                 Text.contains("_unsafe_preserve_version_counter")) &&
                Effects.Backpropagates;
  IsModuleForward = type(S.Node) == "function_definition" && !S.Parent &&
                    F.text(field(S.Node, "name")) == "forward" &&
                    F.isModuleClass(S.Class);
  TracksValues =
      (IsModuleForward || Text.contains("backward")) && writesInPlace();
  Graph.setEntry(startBlock());
  Exit = Graph.addBlock();
  TSNode Body = S.Node;
  if (type(S.Node) != "module") {
    Body = field(S.Node, "body");
    // Parameters carry whatever history the caller's arguments have, and
    // hold the caller's tensors.
    for (TSNode Name : S.Parameters)
      if (type(Name) == "identifier") {
        OriginId Origin;
        ValueId V = Graph.addInputValue(Origin);
        Names[F.text(Name)] = V;
        if (TracksValues && F.text(Name) != "self")
          Graph.setInputStorage(V, newStorage());
      }
    // Where steps are followed, a parameter holds the outputs of the module
    // forwards its callers' arguments went through (backward(gen_loss)
    // after process() ran the discriminator): they ran before the call.
    Binding Plain;
    Plain.Info.BroadcastsBuffers = false;
    Plain.Info.HasBuffers = false;
    if (TracksSteps)
      for (TSNode Name : S.Parameters) {
        if (type(Name) != "identifier" || F.text(Name) == "self")
          continue;
        for (const Frontend::ReachedForward &R : F.forwardsReaching(Name, S)) {
          ValueId Output = Graph.addValue();
          Event Forward = Event::forward(
              site(R.Call.tree == S.Node.tree ? R.Call : S.Node),
              objectFor(R.Module.Key, Plain), /*GradEnabled=*/true,
              Output, {});
          saveParameters(Forward, R.Module, {});
          Graph.append(Current, std::move(Forward));
          Graph.append(Current, Event::derive(Names[F.text(Name)], {Output},
                                              /*Strong=*/false));
        }
      }
    // @torch.no_grad() on the function.
    TSNode Parent = ts_node_parent(S.Node);
    if (!isNull(Parent) && type(Parent) == "decorated_definition")
      forEachNamedChild(Parent, [&](TSNode D) {
        if (type(D) == "decorator")
          if (std::optional<bool> Off = gradModeOf(namedChild(D, 0)))
            GradEnabled = !*Off;
      });
  }
  if (TracksValues && IsModuleForward) {
    Carried = carriedState();
    for (const CarriedState &State : Carried)
      CarriedValues.push_back(Names[State.Parameter]);
    if (!Carried.empty()) {
      CallHead = Graph.addBlock();
      edgeTo(CallHead);
      Current = CallHead;
    }
  }
  if (type(S.Node) == "lambda") {
    Values Result = expression(Body);
    Graph.append(Current, Event::ret(site(Body), Result));
  } else {
    statements(Body);
  }
  edgeTo(Exit);
}

void Lowering::statements(TSNode Block) {
  forEachNamedChild(Block, [&](TSNode N) {
    // Where each site's statement stands, for the no_sync() fix
    // (ts_node_parent walks down from the root: measured, 4% of a check).
    Place Outer = Here;
    Here = {N, Block};
    statement(N);
    Here = Outer;
  });
}

void Lowering::statement(TSNode N) {
  StringRef Kind = type(N);
  if (Kind == "function_definition" || Kind == "class_definition" ||
      Kind == "decorated_definition" || Kind == "comment" ||
      Kind == "import_statement" || Kind == "import_from_statement")
    return;
  if (Kind == "if_statement") {
    unsigned Join = Graph.addBlock();
    expression(field(N, "condition"));
    unsigned Branch = Current;
    startBlock();
    Graph.addEdge(Branch, Current);
    statements(field(N, "consequence"));
    edgeTo(Join);
    bool HasElse = false;
    for (uint32_t I = 0, E = ts_node_named_child_count(N); I < E; ++I) {
      TSNode Clause = namedChild(N, I);
      if (type(Clause) == "elif_clause") {
        Current = Branch;
        expression(field(Clause, "condition"));
        Branch = Current;
        startBlock();
        Graph.addEdge(Branch, Current);
        statements(field(Clause, "consequence"));
        edgeTo(Join);
      } else if (type(Clause) == "else_clause") {
        HasElse = true;
        startBlock();
        Graph.addEdge(Branch, Current);
        statements(field(Clause, "body"));
        edgeTo(Join);
      }
    }
    if (!HasElse)
      Graph.addEdge(Branch, Join);
    Current = Join;
    return;
  }
  if (Kind == "for_statement" || Kind == "while_statement") {
    Values Iterated;
    if (Kind == "for_statement")
      Iterated = expression(field(N, "right"));
    unsigned Head = Graph.addBlock(), Exit = Graph.addBlock();
    edgeTo(Head);
    Current = Head;
    if (Kind == "for_statement")
      assign(field(N, "left"), Iterated, /*Accumulate=*/false);
    else
      expression(field(N, "condition"));
    unsigned Test = Current;
    startBlock();
    Graph.addEdge(Test, Current);
    Loops.push_back({Head, Exit});
    statements(field(N, "body"));
    Loops.pop_back();
    edgeTo(Head);
    // The else clause runs when the loop ends without a break.
    Current = Test;
    if (TSNode Else = field(N, "alternative"); !isNull(Else)) {
      startBlock();
      Graph.addEdge(Test, Current);
      statements(field(Else, "body"));
    }
    edgeTo(Exit);
    Current = Exit;
    return;
  }
  if (Kind == "break_statement" || Kind == "continue_statement") {
    if (!Loops.empty())
      edgeTo(Kind == "break_statement" ? Loops.back().Exit : Loops.back().Head);
    startBlock(); // Unreachable.
    return;
  }
  if (Kind == "return_statement") {
    Values Result = children(N);
    SiteId Site = site(N);
    Graph.append(Current, Event::ret(Site, Result));
    if (TracksValues && IsModuleForward && !Result.empty()) {
      // With carried state the caller backpropagates once through several
      // calls: the graph stays for the next call's result.
      Graph.append(Current, Event::backward(Site, Result,
                                            /*RetainGraph=*/!Carried.empty()));
      ResultBackwards.insert(Site);
    }
    if (!Carried.empty() && !Result.empty()) {
      unsigned Returning = Current;
      startBlock();
      Graph.addEdge(Returning, Current);
      for (ValueId State : CarriedValues)
        Graph.append(Current, Event::derive(State, Result, /*Strong=*/false));
      edgeTo(CallHead);
      Current = Returning;
    }
    edgeTo(Exit);
    startBlock(); // Unreachable.
    return;
  }
  if (Kind == "with_statement") {
    bool Saved = GradEnabled;
    bool SavedPreserves = PreservesVersions;
    llvm::StringSet<> SavedNoSync = NoSyncObjects;
    forEachNamedChild(N, [&](TSNode Child) {
      if (type(Child) != "with_clause")
        return;
      forEachNamedChild(Child, [&](TSNode Item) {
        TSNode Value = field(Item, "value");
        TSNode Alias{};
        if (!isNull(Value) && type(Value) == "as_pattern") {
          Alias = field(Value, "alias");
          Value = namedChild(Value, 0);
        }
        if (std::optional<bool> Off = gradModeOf(Value))
          GradEnabled = !*Off;
        if (type(Value) == "call" &&
            F.qualifiedName(field(Value, "function")) ==
                "torch.autograd._unsafe_preserve_version_counter")
          PreservesVersions = true;
        // with model.no_sync(): on a DDP object.
        TSNode Callee = field(Value, "function");
        if (type(Value) == "call" && type(Callee) == "attribute" &&
            F.text(field(Callee, "attribute")) == "no_sync") {
          std::string Key = F.bindingKey(field(Callee, "object"), S);
          if (!Key.empty() && F.isDDPValue(field(Callee, "object"), S, nullptr))
            NoSyncObjects.insert(Key);
        }
        Values From = expression(Value);
        if (!isNull(Alias))
          assign(namedChild(Alias, 0), From, false);
      });
    });
    statements(field(N, "body"));
    GradEnabled = Saved;
    PreservesVersions = SavedPreserves;
    NoSyncObjects = std::move(SavedNoSync);
    return;
  }
  if (Kind == "try_statement") {
    // A handler may start anywhere in the body: from its start or its end.
    unsigned Start = Current, Join = Graph.addBlock();
    startBlock();
    Graph.addEdge(Start, Current);
    statements(field(N, "body"));
    unsigned BodyEnd = Current;
    TSNode Finally{};
    forEachNamedChild(N, [&](TSNode Clause) {
      StringRef Kind = type(Clause);
      if (Kind == "except_clause" || Kind == "except_group_clause") {
        startBlock();
        Graph.addEdge(Start, Current);
        Graph.addEdge(BodyEnd, Current);
        forEachNamedChild(Clause, [&](TSNode Part) {
          if (type(Part) == "block")
            statements(Part);
        });
        edgeTo(Join);
      } else if (Kind == "else_clause") {
        unsigned From = BodyEnd;
        startBlock();
        Graph.addEdge(From, Current);
        statements(field(Clause, "body"));
        BodyEnd = Current;
      } else if (Kind == "finally_clause") {
        Finally = Clause;
      }
    });
    Current = BodyEnd;
    edgeTo(Join);
    Current = Join;
    if (!isNull(Finally))
      forEachNamedChild(Finally, [&](TSNode Part) {
        if (type(Part) == "block")
          statements(Part);
      });
    return;
  }
  if (Kind == "expression_statement") {
    forEachNamedChild(N, [&](TSNode E) {
      if (type(E) == "assignment" || type(E) == "augmented_assignment")
        statement(E);
      else
        expression(E);
    });
    return;
  }
  if (Kind == "assignment") {
    TSNode Right = field(N, "right");
    Values From;
    if (!isNull(Right) && type(Right) == "assignment") {
      statement(Right); // a = b = value
      From = expression(field(Right, "left"));
    } else if (!isNull(Right)) {
      From = expression(Right);
    }
    assign(field(N, "left"), From, /*Accumulate=*/false, Right);
    return;
  }
  if (Kind == "augmented_assignment") {
    Values From = expression(field(N, "right"));
    // x += y on a tensor writes x in place (every augmented operator of
    // torch.Tensor does: __iadd__ ... __irshift__, but not @=).
    TSNode Operator = field(N, "operator");
    if (TracksValues && F.text(Operator) != "@=") {
      TSNode Left = field(N, "left");
      if (type(Left) == "subscript")
        valueWrite(ValueWrite::Subscript, N, field(Left, "value"),
                   F.text(N).str());
      else
        valueWrite(ValueWrite::Augmented, N, Left, F.text(Operator).str());
    }
    assign(field(N, "left"), From, /*Accumulate=*/true);
    return;
  }
  if (Kind == "block") {
    statements(N);
    return;
  }
  children(N);
}

void Lowering::assign(TSNode Left, const Values &From, bool Accumulate,
                      TSNode Right) {
  forEachTarget(Left, [&](TSNode Target) {
    StringRef Kind = type(Target);
    // x[i] = v writes x in place (x[i] += v is written by the augmented
    // assignment).
    if (Kind == "subscript" && TracksValues && !Accumulate &&
        type(ts_node_parent(Left)) == "assignment") {
      TSNode Assignment = ts_node_parent(Left);
      StringRef Value = F.text(field(Assignment, "right"));
      if (Value.empty() || Value.size() > 30 || Value.contains('\n'))
        Value = "...";
      valueWrite(ValueWrite::Subscript, Assignment, field(Target, "value"),
                 (F.text(Target) + " = " + Value).str());
    }
    if (Kind == "subscript" || (Kind == "attribute" &&
                                F.bindingKey(Target, S).empty())) {
      // x[i] = v, out.field = v: x's history now includes v's.
      Values Base = expression(field(Target, Kind == "subscript" ? "value"
                                                                 : "object"));
      for (ValueId V : Base) {
        Values Sources = From;
        Sources.push_back(V);
        Graph.append(Current, Event::derive(V, Sources, /*Strong=*/true));
      }
      return;
    }
    if (Kind == "list_splat_pattern")
      Target = namedChild(Target, 0);
    std::string Key = F.bindingKey(Target, S);
    if (Key.empty())
      return;
    ValueId V = valueOf(Key);
    Values Sources = From;
    if (Accumulate)
      Sources.push_back(V);
    Event Derive = Event::derive(V, Sources, /*Strong=*/true);
    // y = x and views share x's storage; anything else is a new tensor (or
    // no tensor, which no operation saves). x += y keeps x's.
    if (TracksValues && !Accumulate) {
      std::optional<ValueId> Shared;
      if (!isNull(Right) && ts_node_eq(Target, Left))
        Shared = storageSource(Right);
      if (Shared)
        Derive.StorageOf = *Shared;
      else
        Derive.NewStorage = newStorage();
    }
    Graph.append(Current, std::move(Derive));
  });
}

Lowering::Values Lowering::children(TSNode N) {
  Values All;
  forEachNamedChild(N, [&](TSNode Child) {
    Values From = expression(Child);
    All.append(From.begin(), From.end());
  });
  return All;
}

Lowering::Values Lowering::expression(TSNode N) {
  if (isNull(N))
    return {};
  StringRef Kind = type(N);
  if (Kind == "identifier" || (Kind == "attribute" &&
                               !F.bindingKey(N, S).empty())) {
    std::string Key = F.bindingKey(N, S);
    // Imported modules and functions carry no history.
    if (!Names.count(Key) && F.Imports.count(Key))
      return {};
    return {valueOf(Key)};
  }
  if (Kind == "attribute")
    return expression(field(N, "object"));
  if (Kind == "call")
    return call(N);
  if (Kind == "binary_operator" && TracksValues) {
    llvm::SmallVector<TSNode, 4> Operands, Others;
    if (const SavedOp *Op = savingOpOf(N, Operands, Others))
      return savingOp(N, *Op, Operands, Others);
  }
  if (Kind == "lambda" || Kind == "string" || Kind == "integer" ||
      Kind == "float" || Kind == "true" || Kind == "false" || Kind == "none" ||
      Kind == "comment")
    return {};
  if (Kind == "list_comprehension" || Kind == "generator_expression" ||
      Kind == "set_comprehension" || Kind == "dictionary_comprehension") {
    // The body runs once per element: a loop.
    forEachNamedChild(N, [&](TSNode Clause) {
      if (type(Clause) == "for_in_clause")
        assign(field(Clause, "left"), expression(field(Clause, "right")),
               false);
    });
    unsigned Before = Current;
    unsigned Body = startBlock();
    Graph.addEdge(Before, Body);
    forEachNamedChild(N, [&](TSNode Clause) {
      if (type(Clause) == "if_clause")
        children(Clause);
    });
    Values Element = expression(field(N, "body"));
    ValueId Result = Graph.addValue();
    Graph.append(Current, Event::derive(Result, Element, /*Strong=*/false));
    edgeTo(Body);
    unsigned After = Graph.addBlock();
    edgeTo(After);
    Graph.addEdge(Before, After);
    Current = After;
    return {Result};
  }
  return children(N);
}

void Lowering::appendStep(SiteId Site, std::string Optimizer,
                          const Frontend::OptimizerInfo &Info) {
  llvm::SmallVector<TensorSetId, 2> Written;
  for (const std::string &Key : Info.ParametersOf)
    for (TensorSetId Set : overlappingParameters(Key))
      if (!llvm::is_contained(Written, Set))
        Written.push_back(Set);
  // A step that bumps is silent only to forwards saved under hooks
  // (Clobber::Silent), and reported as such there.
  std::vector<std::string> Names;
  for (const std::string &Key : Info.ParametersOf)
    Names.push_back(displayName(Key));
  SilentWrites[Site] = {Info.Bumps ? SilentWriteFinding::Way::CheckpointedStep
                                   : SilentWriteFinding::Way::FusedStep,
                        "step of '" + Optimizer + "'", "",
                        llvm::join(Names, ", ")};
  Steps[Site] = {std::move(Optimizer), Info};
  Graph.append(Current, Event::write(Site, WriteKind::Step, Written, {},
                                     /*Silent=*/!Info.Bumps));
}

Lowering::Values Lowering::call(TSNode N) {
  TSNode Callee = field(N, "function");
  TSNode Arguments = field(N, "arguments");
  auto Argument = [&](StringRef Keyword, unsigned Position) -> TSNode {
    unsigned Index = 0;
    TSNode Found{};
    forEachNamedChild(Arguments, [&](TSNode A) {
      if (type(A) == "keyword_argument") {
        if (F.text(field(A, "name")) == Keyword)
          Found = field(A, "value");
      } else if (Index++ == Position) {
        Found = A;
      }
    });
    return Found;
  };
  auto KeywordIsTrue = [&](StringRef Keyword) {
    TSNode Value = Argument(Keyword, ~0u);
    return isTrue(Value);
  };

  // A forward on a DDP object: model(x), model.forward(x), self.model(x);
  // or past it, on the module it wraps: model.module(x), which saves the
  // buffers without a broadcast (issue 28, item 7).
  TSNode Object = Callee;
  if (type(Callee) == "attribute" &&
      F.text(field(Callee, "attribute")) == "forward")
    Object = field(Callee, "object");
  bool Bypass = false;
  if (type(Object) == "attribute" &&
      F.text(field(Object, "attribute")) == "module") {
    Object = field(Object, "object");
    Bypass = true;
  }
  Binding Info;
  std::string Key = F.bindingKey(Object, S);
  bool OnDDP = !Key.empty() && F.isDDPValue(Object, S, &Info);
  if (Bypass && !OnDDP) {
    Object = Callee;
    Bypass = false;
    Key = F.bindingKey(Object, S);
    OnDDP = !Key.empty() && F.isDDPValue(Object, S, &Info);
  }
  if (OnDDP) {
    Values Inputs = children(Arguments);
    std::optional<Frontend::ModuleInfo> Module;
    if (TracksSteps)
      Module = moduleNamed(Object, Key);
    ValueId Output = forward(Current, N, Key, Info, Inputs,
                             Module ? &*Module : nullptr, Bypass);
    if (TracksValues)
      OpResults[N.id] = Output;
    return {Output};
  }
  // A plain module's forward, where steps are followed: it saves its
  // parameters, which a step may write before the backward through it.
  // Where values are followed, its output is what may require grad.
  // An instance's attribute (model.generator(x)) may be a plain module too.
  if (Key.empty())
    Key = attributeModuleKey(Object);
  if ((TracksSteps || TracksValues) && !Key.empty())
    if (std::optional<Frontend::ModuleInfo> Module = moduleNamed(Object, Key)) {
      Values Inputs = children(Arguments);
      Binding Plain;
      Plain.Info.BroadcastsBuffers = false;
      Plain.Info.HasBuffers = false;
      ValueId Output = Graph.addValue();
      std::optional<ValueId> Written;
      std::string InPlaceClass =
          TracksValues ? inPlaceModule(Callee) : std::string();
      // A module whose forward starts with an in-place layer, or with one
      // that saves its input (a block of the run, a Sequential).
      Frontend::InputUse InputUse =
          TracksValues && InPlaceClass.empty() && F.mayWriteInputsInPlace()
              ? F.firstInputUse(Callee, S)
              : Frontend::InputUse::Unknown;
      if (!InPlaceClass.empty() || InputUse == Frontend::InputUse::Writes) {
        // nn.ReLU(inplace=True): the forward writes its input and returns it.
        valueWrite(ValueWrite::Module, N, Argument("input", 0),
                   F.text(Callee).str());
        Written = storageSource(Argument("input", 0));
      }
      Event Forward = Event::forward(site(N), objectFor(Key, Plain),
                                     GradEnabled, Output, Inputs);
      if (Written)
        Forward.StorageOf = *Written;
      else if (TracksValues)
        Forward.NewStorage = newStorage();
      saveParameters(Forward, *Module, Inputs);
      if (TracksValues && InPlaceClass.empty())
        saveOutput(Forward, N, Callee, Inputs);
      // nn.Linear, nn.LayerNorm, ...: the input, for the weight's gradient.
      if (TracksValues && InPlaceClass.empty() &&
          (InputUse == Frontend::InputUse::Saves || F.savesItsInput(Callee, S)))
        if (std::optional<ValueId> Input = storageSource(Argument("input", 0))) {
          Save Saved;
          Saved.StorageOf = *Input;
          Forward.Saves.push_back(std::move(Saved));
          SavingOps[Forward.Site] = N;
        }
      Graph.append(Current, std::move(Forward));
      if (TracksValues)
        OpResults[N.id] = Output;
      // nn.ReLU runs relu_, which saves its result: the written input.
      if (InPlaceClass == "torch.nn.ReLU")
        if (std::optional<ValueId> Relu = savesItsResult(
                N, Argument("input", 0), "relu", SavedOpForm::Function))
          return {Output, *Relu};
      return {Output};
    }
  // opt.step(), scaler.step(opt): the step writes the parameters.
  if (TracksSteps && type(Callee) == "attribute" &&
      F.text(field(Callee, "attribute")) == "step") {
    TSNode Stepped;
    if (std::optional<Frontend::OptimizerInfo> Optimizer =
            F.steppedOptimizer(N, S, Stepped)) {
      Values All = children(Arguments);
      appendStep(site(N), F.text(Stepped).str(), *Optimizer);
      return All;
    }
  }

  std::string Name = F.qualifiedName(Callee);
  if (TracksSteps && Name == "torch.utils.checkpoint.checkpoint")
    if (std::optional<ValueId> Output = checkpointedForward(N))
      return {*Output};
  if (Name == "torch.autograd.backward" || Name == "torch.autograd.grad") {
    Values Roots = expression(Argument("tensors", 0));
    if (Name == "torch.autograd.grad") {
      Roots = expression(Argument("outputs", 0));
      Values Rest = expression(Argument("inputs", 1));
      ValueId Gradients = Graph.addValue();
      bool Create = KeywordIsTrue("create_graph");
      Graph.append(Current,
                   Event::grad(site(N), Roots,
                               KeywordIsTrue("retain_graph") || Create, Create,
                               Gradients));
      return {Gradients};
    }
    Graph.append(Current,
                 Event::backward(site(N), Roots, KeywordIsTrue("retain_graph"),
                                 KeywordIsTrue("create_graph")));
    return {};
  }
  if (type(Callee) == "attribute") {
    StringRef Method = F.text(field(Callee, "attribute"));
    TSNode Receiver = field(Callee, "object");
    if (Method == "backward" || Method == "manual_backward") {
      // loss.backward(), scaler.scale(loss).backward(),
      // accelerator.backward(loss), self.manual_backward(loss).
      Values Roots = expression(Receiver);
      Values Loss = expression(namedChild(Arguments, 0));
      if (!isNull(Arguments) && ts_node_named_child_count(Arguments) > 0 &&
          type(namedChild(Arguments, 0)) != "keyword_argument")
        Roots.append(Loss.begin(), Loss.end());
      bool Create = KeywordIsTrue("create_graph");
      Graph.append(Current, Event::backward(site(N), Roots,
                                            KeywordIsTrue("retain_graph") ||
                                                Create,
                                            Create));
      return {};
    }
    if (Method == "detach" || Method == "item" || Method == "tolist" ||
        Method == "numpy") {
      expression(Receiver);
      children(Arguments);
      return {};
    }
  }
  // map(model, views): a forward per element.
  if (Name == "map" && F.isDDPValue(namedChild(Arguments, 0), S, &Info)) {
    std::string Mapped = F.bindingKey(namedChild(Arguments, 0), S);
    if (!Mapped.empty()) {
      Values Inputs = expression(namedChild(Arguments, 1));
      unsigned Before = Current, Body = startBlock(), After = Graph.addBlock();
      Graph.addEdge(Before, Body);
      ValueId Output = forward(Body, N, Mapped, Info, Inputs);
      ValueId Results = Graph.addValue();
      // Every element's output stays in the result.
      Graph.append(Body, Event::derive(Results, {Output}, /*Strong=*/false));
      Graph.addEdge(Body, Body);
      Graph.addEdge(Body, After);
      Graph.addEdge(Before, After);
      Current = After;
      return {Results};
    }
  }
  // A helper of the file that runs forwards on DDP objects: they run here.
  Scope *Helper = F.calledFunction(Callee, S);
  if (Helper == &S)
    Helper = nullptr;
  if (Helper) {
    const std::vector<Frontend::HelperForward> &Forwards =
        F.helperForwards(*Helper);
    if (!Forwards.empty()) {
      Values Inputs = children(Arguments);
      Values Result = Inputs;
      for (const Frontend::HelperForward &HF : Forwards) {
        std::string Key = HF.Key;
        Binding Bound;
        if (HF.Parameter) {
          TSNode Passed{};
          const Scope *ReadIn = &S;
          F.forEachCallArgument(
              N, S, *Helper, [&](TSNode Value, unsigned I, const Scope &In) {
                if (I == *HF.Parameter) {
                  Passed = Value;
                  ReadIn = &In;
                }
              });
          Key = F.bindingKey(Passed, *ReadIn);
          if (Key.empty() || !F.isDDPValue(Passed, *ReadIn, &Bound))
            continue;
        } else {
          // self.X of the same class, or a global.
          if (StringRef(Key).starts_with("self.") &&
              (isNull(S.Class) || isNull(Helper->Class) ||
               !ts_node_eq(S.Class, Helper->Class)))
            continue;
          // A global of the helper's file, when it is another.
          const Binding *Shared = Helper->Owner != &F
                                      ? F.ddpBinding(Key, *Helper)
                                      : F.ddpBinding(Key, S);
          if (!Shared)
            continue;
          Bound = *Shared;
        }
        Result.push_back(forward(Current, N, Key, Bound, Inputs));
      }
      return Result;
    }
  }
  if (Helper && TracksSteps)
    if (std::optional<Values> Result = helperCall(N, *Helper))
      return *Result;
  if (TracksValues) {
    llvm::SmallVector<TSNode, 4> Operands, Others;
    if (const SavedOp *Op = savingOpOf(N, Operands, Others))
      return savingOp(N, *Op, Operands, Others);
    // torch.randn(4, requires_grad=True), nn.Parameter(...): a leaf that
    // requires grad, as a function's parameter may.
    if (Name == "torch.nn.Parameter" || KeywordIsTrue("requires_grad")) {
      children(Arguments);
      OriginId Origin;
      ValueId Leaf = Graph.addInputValue(Origin);
      Graph.setInputStorage(Leaf, newStorage());
      return {Leaf};
    }
  }
  // Anything else: the result's history may come from the receiver and the
  // arguments, and a method may keep its arguments in its receiver
  // (outs.append(model(v)), x.add_(y)).
  Values All = children(Arguments);
  if (type(Callee) == "attribute" && !All.empty()) {
    std::string Receiver = F.bindingKey(field(Callee, "object"), S);
    if (!Receiver.empty() && !F.Imports.count(Receiver) &&
        !F.isDDPValue(field(Callee, "object"), S, nullptr)) {
      ValueId V = valueOf(Receiver);
      Graph.append(Current, Event::derive(V, All, /*Strong=*/false));
    }
  }
  if (type(Callee) != "identifier") {
    Values From = expression(Callee);
    All.append(From.begin(), From.end());
  }
  // In-place writes, after the receiver is lowered: x.mul_(2),
  // torch.relu_(x), F.relu(x, inplace=True), an in-place module's forward
  // (one that moduleNamed does not follow).
  if (TracksValues) {
    TSNode Written{};
    ValueWrite::Form Form = ValueWrite::Function;
    std::string Operation;
    // The out-of-place operation, for what the in-place one saves.
    StringRef Base;
    SavedOpForm BaseForm = SavedOpForm::Function;
    bool Imported = F.Imports.count(Name.substr(0, Name.find('.')));
    if (type(Callee) == "attribute" && !Imported &&
        isInPlaceOp(F.text(field(Callee, "attribute"))) &&
        !F.isDDPValue(field(Callee, "object"), S, nullptr)) {
      Written = field(Callee, "object");
      bool ThroughData = type(Written) == "attribute" &&
                         F.text(field(Written, "attribute")) == "data";
      if (ThroughData || PreservesVersions) {
        silentWrite(N, Written, ThroughData, F.text(Callee).str());
        return All;
      }
      Form = ValueWrite::Method;
      Operation = F.text(field(Callee, "attribute")).str();
      Base = F.text(field(Callee, "attribute")).drop_back();
      BaseForm = SavedOpForm::Method;
    } else if (StringRef(Name).starts_with("torch.") &&
               (isInPlaceOp(StringRef(Name).rsplit('.').second) ||
                (StringRef(Name).starts_with("torch.nn.functional.") &&
                 KeywordIsTrue("inplace")))) {
      Written = Argument("input", 0);
      Operation = F.text(Callee).str();
      Base = StringRef(Name).rsplit('.').second;
      if (Base.consume_back("_"))
        BaseForm = SavedOpForm::Function;
      else
        Operation += "(..., inplace=True)";
      if (StringRef(Name).starts_with("torch.nn.functional."))
        BaseForm = SavedOpForm::Functional;
    } else if (!inPlaceModule(Callee).empty()) {
      Written = Argument("input", 0);
      Form = ValueWrite::Module;
      Operation = F.text(Callee).str();
    }
    if (!isNull(Written)) {
      valueWrite(Form, N, Written, Operation);
      if (!Base.empty())
        if (std::optional<ValueId> Result =
                savesItsResult(N, Written, Base, BaseForm))
          All.push_back(*Result);
    }
  }
  return All;
}

} // namespace detail
} // namespace python
} // namespace ddpguard
