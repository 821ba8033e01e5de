//===- Modules.cpp - what a module holds: buffers, parameters, optimizers ---===//

#include "Frontend.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/ScopeExit.h"
#include <functional>

namespace ddpguard {
namespace python {
namespace detail {

using namespace model;
using llvm::StringRef;

Buffers Frontend::classBuffers(TSNode Class, unsigned Depth,
                               std::string &Why) const {
  Buffers Result = Buffers::No;
  StringRef Name = text(field(Class, "name"));
  // Bases: nn.Module adds nothing, a class of the file what it has, any
  // other base is not followed.
  forEachNamedChild(field(Class, "superclasses"), [&](TSNode Base) {
    std::string Qualified = qualifiedName(Base);
    if (Qualified == "torch.nn.Module" || Qualified == "object")
      return;
    auto Known = Classes.find(Qualified);
    if (Known != Classes.end() && Depth < 8) {
      Result = either(Result,
                      nested(classBuffers(Known->second, Depth + 1, Why)));
      return;
    }
    if (auto [File, Rest] = imported(Qualified); File && Depth < 8) {
      auto Imported = File->Classes.find(Rest);
      if (Imported != File->Classes.end()) {
        Result = either(Result, nested(File->classBuffers(Imported->second,
                                                          Depth + 1, Why)));
        return;
      }
    }
    if (StringRef(Qualified).starts_with("torch.nn.")) {
      Result = either(Result, torchNNBuffers(Qualified, false, false));
      return;
    }
    Result = either(Result, Buffers::Unknown);
    if (Why.empty())
      Why = "'" + Name.str() + "' derives from '" + text(Base).str() +
            "', which the checker does not follow";
  });
  Scope Methods;
  Methods.Class = Class;
  llvm::StringSet<> Registered;
  forEachInScopeOfClass(Class, [&](TSNode N) {
    if (Result == Buffers::Yes)
      return;
    if (type(N) == "call" &&
        type(field(N, "function")) == "attribute" &&
        text(field(field(N, "function"), "attribute")) == "register_buffer") {
      TSNode Name = namedChild(field(N, "arguments"), 0);
      TSNode Content = namedChild(Name, 1);
      // register_buffer("mean", ...): a name the forward reads as self.mean.
      if (type(Name) == "string" && ts_node_named_child_count(Name) == 3 &&
          type(Content) == "string_content")
        Registered.insert(text(Content));
      else
        Result = Buffers::Yes;
      return;
    }
    if (type(N) != "assignment")
      return;
    TSNode Left = field(N, "left");
    if (type(Left) != "attribute" || text(field(Left, "object")) != "self")
      return;
    TSNode Right = field(N, "right");
    std::string Unused;
    // Attributes that are not modules (numbers, tensors, parameters) hold
    // no buffers; a module call of unknown type may.
    if (type(Right) != "call")
      return;
    std::string Qualified = qualifiedName(field(Right, "function"));
    if (Qualified.empty() || Qualified == "torch.nn.Parameter" ||
        StringRef(Qualified).starts_with("torch.") &&
            !StringRef(Qualified).starts_with("torch.nn."))
      return;
    Result = either(Result,
                    nested(moduleBuffers(Right, Methods, Depth + 1, Why)));
  });
  if (!Registered.empty())
    Result = either(Result, ownBuffersSaved(Class, Registered));
  return Result;
}

Buffers Frontend::ownBuffersSaved(TSNode Class,
                                  const llvm::StringSet<> &Names) const {
  TSNode Forward{};
  forEachNamedChild(field(Class, "body"), [&](TSNode Member) {
    if (type(Member) == "decorated_definition")
      Member = field(Member, "definition");
    if (type(Member) == "function_definition" &&
        text(field(Member, "name")) == "forward")
      Forward = Member;
  });
  if (isNull(Forward))
    return Buffers::Yes;
  auto IsBuffer = [&](TSNode N) {
    return type(N) == "attribute" && text(field(N, "object")) == "self" &&
           Names.contains(text(field(N, "attribute")));
  };
  // The forward's names that derive from the module's parameters: what is
  // assigned from self.<anything but a buffer> or from such a name.
  llvm::StringSet<> FromParameters;
  auto DerivesFromParameters = [&](TSNode E) {
    bool Found = false;
    auto Visit = [&](TSNode N, auto &Self) -> void {
      if (Found || isNull(N) || IsBuffer(N))
        return;
      if ((type(N) == "identifier" && FromParameters.contains(text(N))) ||
          (type(N) == "attribute" && text(field(N, "object")) == "self")) {
        Found = true;
        return;
      }
      forEachNamedChild(N, [&](TSNode Child) { Self(Child, Self); });
    };
    Visit(E, Visit);
    return Found;
  };
  TSNode Body = field(Forward, "body");
  // Assignments in a loop may feed earlier lines: repeat until nothing new.
  for (bool Changed = true; Changed;) {
    Changed = false;
    forEachInScope(Body, [&](TSNode N) {
      if ((type(N) == "assignment" || type(N) == "augmented_assignment") &&
          DerivesFromParameters(field(N, "right")))
        forEachTarget(field(N, "left"), [&](TSNode Target) {
          if (type(Target) == "identifier")
            Changed |= FromParameters.insert(text(Target)).second;
        });
    });
  }
  // A buffer is saved by the op that reads it when another operand may
  // require grad; any use other than an operand of an arithmetic operator
  // or an argument of a call is taken to save it.
  Buffers Result = Buffers::IfInputRequiresGrad;
  forEachInScope(Body, [&](TSNode N) {
    if (Result == Buffers::Yes || !IsBuffer(N))
      return;
    TSNode Parent = ts_node_parent(N);
    bool AgainstParameters = true;
    if (type(Parent) == "binary_operator") {
      TSNode Left = field(Parent, "left");
      AgainstParameters = DerivesFromParameters(
          ts_node_eq(Left, N) ? field(Parent, "right") : Left);
    } else if (type(Parent) == "argument_list") {
      AgainstParameters = false;
      TSNode Call = ts_node_parent(Parent);
      TSNode Callee = field(Call, "function");
      // self.pos(self.position_ids): a submodule's forward (an embedding
      // saves its indices) is taken to save what it is given.
      if (type(Callee) == "attribute")
        AgainstParameters = DerivesFromParameters(field(Callee, "object")) ||
                            DerivesFromParameters(Callee);
      forEachNamedChild(Parent, [&](TSNode Argument) {
        if (!ts_node_eq(Argument, N))
          AgainstParameters |= DerivesFromParameters(Argument);
      });
    }
    if (AgainstParameters)
      Result = Buffers::Yes;
  });
  return Result;
}

Buffers Frontend::moduleBuffers(TSNode N, const Scope &S, unsigned Depth,
                                std::string &Why) const {
  auto Unknown = [&](const std::string &Reason) {
    if (Why.empty())
      Why = Reason;
    return Buffers::Unknown;
  };
  if (isNull(N))
    return Unknown("the wrapped module is not found in the construction");
  if (Depth > 8)
    return Unknown("the wrapped module is built too deep to follow");
  StringRef Kind = type(N);
  if (Kind == "parenthesized_expression")
    return moduleBuffers(namedChild(N, 0), S, Depth + 1, Why);
  if (Kind == "identifier") {
    // Every assignment to the name in its scope (or the module's): what any
    // of them holds.
    std::optional<Buffers> Result;
    auto Scan = [&](const Scope &In) {
      for (TSNode A : In.Bindings) {
        if (type(A) != "assignment")
          continue;
        bool Assigns = false;
        forEachTarget(field(A, "left"), [&](TSNode Target) {
          Assigns |= type(Target) == "identifier" && text(Target) == text(N);
        });
        TSNode Right = field(A, "right");
        // model = DDP(model) is the construction itself.
        if (!Assigns || constructedWrapper(Right))
          continue;
        Buffers Held = moduleBuffers(Right, In, Depth + 1, Why);
        Result = Result ? either(*Result, Held) : Held;
      }
    };
    Scan(S);
    if (!Result && ModuleScope && &S != ModuleScope)
      Scan(*ModuleScope);
    if (Result)
      return *Result;
    return Unknown("'" + text(N).str() + "' is not assigned a module the "
                   "checker can follow");
  }
  if (Kind != "call")
    return Unknown("'" + text(N).str() + "' is not a module the checker can "
                   "follow");
  TSNode Callee = field(N, "function");
  TSNode Arguments = field(N, "arguments");
  // model.cuda(rank), model.to(device), copy.deepcopy(model),
  // SyncBatchNorm.convert_sync_batchnorm(model): the same module's buffers.
  if (type(Callee) == "attribute" &&
      returnsItsModule(text(field(Callee, "attribute"))))
    return moduleBuffers(field(Callee, "object"), S, Depth + 1, Why);
  std::string Name = qualifiedName(Callee);
  if (Name == "copy.deepcopy")
    return moduleBuffers(namedChild(Arguments, 0), S, Depth + 1, Why);
  // torch.compile(model): its graph saves the batch's statistics, not the
  // norm layers' running ones (run on torch 2.11.0); other buffers (index
  // tables, cached constants) it saves as eager does. SyncBatchNorm's own
  // function, run with more than one rank, saves none of them either
  // (torch/nn/modules/_functions.py, 2.11 to 2.15; docs/python-checker.md).
  if (Name == "torch.compile" ||
      StringRef(Name).ends_with("convert_sync_batchnorm")) {
    ++Files.RunningStatisticsUnsaved;
    Buffers Held = moduleBuffers(namedChild(Arguments, 0), S, Depth + 1, Why);
    --Files.RunningStatisticsUnsaved;
    return Held;
  }
  StringRef Qualified(Name);
  if (Qualified.consume_front("torch.nn.")) {
    if (Qualified == "Sequential" || Qualified == "ModuleList" ||
        Qualified == "ModuleDict") {
      Buffers Result = Buffers::No;
      forEachNamedChild(Arguments, [&](TSNode Child) {
        Result =
            either(Result, nested(moduleBuffers(Child, S, Depth + 1, Why)));
      });
      return Result;
    }
    bool Off = false, On = false;
    forEachNamedChild(Arguments, [&](TSNode A) {
      if (type(A) == "keyword_argument" &&
          text(field(A, "name")) == "track_running_stats") {
        Off = type(field(A, "value")) == "false";
        On = type(field(A, "value")) == "true";
      }
    });
    return Files.RunningStatisticsUnsaved ? Buffers::No
                                          : torchNNBuffers(Qualified, Off, On);
  }
  if (Qualified.consume_front("torchvision.models."))
    return torchvisionBuffers(Qualified.substr(Qualified.rfind('.') + 1));
  if (Name == "timm.create_model" || Name == "timm.models.create_model") {
    TSNode Model = namedChild(Arguments, 0);
    TSNode Content = namedChild(Model, 1);
    if (type(Model) == "string" && ts_node_named_child_count(Model) == 3 &&
        type(Content) == "string_content")
      if (std::optional<Buffers> Measured = timmBuffers(text(Content)))
        return *Measured;
    return Unknown("'" + text(N).str() + "' is not a timm model the checker "
                   "measured");
  }
  auto Class = Classes.find(Name);
  if (Class != Classes.end())
    return classBuffers(Class->second, Depth + 1, Why);
  if (auto [File, Rest] = imported(Name); File) {
    auto Imported = File->Classes.find(Rest);
    if (Imported != File->Classes.end())
      return File->classBuffers(Imported->second, Depth + 1, Why);
  }
  return Unknown("'" + text(Callee).str() + "' is not a module the checker "
                 "knows");
}

std::optional<Frontend::ParameterSaves>
Frontend::constructedModule(TSNode Call, const Scope &S, unsigned Depth) const {
  if (type(Call) != "call" || Depth > 8)
    return std::nullopt;
  TSNode Callee = field(Call, "function");
  TSNode Arguments = field(Call, "arguments");
  if (type(Callee) == "attribute" &&
      returnsItsModule(text(field(Callee, "attribute"))))
    return constructedModule(field(Callee, "object"), S, Depth + 1);
  std::string Name = constructedClass(Call, S);
  StringRef Layer = Name;
  if (Layer.consume_front("torch.nn.")) {
    if (Layer == "Linear" || Layer == "Bilinear" || Layer == "LazyLinear")
      return ParameterSaves::IfInputRequiresGrad;
    if (Layer.starts_with("Embedding"))
      return ParameterSaves::Never;
    static const char *const WithoutParameters[] = {
        "ReLU",    "LeakyReLU", "GELU",    "SiLU",   "Tanh",    "Sigmoid",
        "Softmax", "Dropout",   "Flatten", "Identity", "ELU",   "Mish",
        "Softplus", "LogSoftmax", "MaxPool1d", "MaxPool2d", "AvgPool2d",
        "AdaptiveAvgPool2d", "Upsample", "Hardtanh"};
    for (const char *Free : WithoutParameters)
      if (Layer == Free)
        return ParameterSaves::NoParameters;
    if (Layer == "Sequential") {
      // A Linear first saves its weight only for an input requiring grad;
      // every later layer's input comes from a parameter.
      bool SeenParameters = false;
      ParameterSaves Result = ParameterSaves::Never;
      forEachNamedChild(Arguments, [&](TSNode Child) {
        std::optional<ParameterSaves> Inner =
            constructedModule(Child, S, Depth + 1);
        ParameterSaves Saves = Inner.value_or(ParameterSaves::Always);
        bool HasParameters = Saves != ParameterSaves::NoParameters;
        if (Saves == ParameterSaves::Always ||
            (Saves == ParameterSaves::IfInputRequiresGrad && SeenParameters))
          Result = ParameterSaves::Always;
        else if (Saves == ParameterSaves::IfInputRequiresGrad &&
                 Result == ParameterSaves::Never)
          Result = ParameterSaves::IfInputRequiresGrad;
        SeenParameters |= HasParameters;
      });
      return Result;
    }
    // Convolutions, norms, PReLU, recurrent layers: always (measured).
    return ParameterSaves::Always;
  }
  if (StringRef(Name).starts_with("torchvision.models."))
    return ParameterSaves::Always;
  if (Classes.count(Name))
    return ParameterSaves::Always;
  if (auto [File, Rest] = imported(Name); File && File->Classes.count(Rest))
    return ParameterSaves::Always;
  if (isPackageClass(Callee, Name))
    return ParameterSaves::Always;
  return std::nullopt;
}

std::string Frontend::constructedClass(TSNode Call, const Scope &S) const {
  TSNode Callee = field(Call, "function");
  std::string Name = qualifiedName(Callee);
  if (type(Callee) != "identifier" || type(S.Node) != "function_definition" ||
      (S.Owner && S.Owner != this))
    return Name;
  TSNode Default{};
  forEachNamedChild(field(S.Node, "parameters"), [&](TSNode P) {
    if ((type(P) == "default_parameter" ||
         type(P) == "typed_default_parameter") &&
        text(field(P, "name")) == text(Callee))
      Default = field(P, "value");
  });
  if (isNull(Default))
    return Name;
  if (type(Default) == "call") {
    std::string Made = qualifiedName(field(Default, "function"));
    if (Made != "functools.partial" && Made != "partial")
      return Name;
    Default = namedChild(field(Default, "arguments"), 0);
  }
  std::string Class = qualifiedName(Default);
  return Class.empty() ? Name : Class;
}

bool Frontend::savesItsInput(TSNode N, const Scope &S) const {
  for (const Value &V : valuesOf(N, S))
    if (type(V.Node) == "call" &&
        savesInput(V.In->Owner->constructedClass(V.Node, *V.In)))
      return true;
  return false;
}

bool Frontend::isPackageClass(TSNode Callee, StringRef Name) const {
  // Only names a forward calls or an optimizer steps get here, so a class
  // from a package the run does not hold (nn_builder's NN, built by a
  // base class's create_NN) is taken as the module the code uses it as.
  // Python's own and numpy's classes are not modules.
  static const char *const NotModules[] = {
      "torch",     "collections", "pathlib",   "argparse", "logging",
      "typing",    "dataclasses", "datetime",  "numpy",    "enum",
      "abc",       "threading",   "multiprocessing", "queue", "functools",
      "itertools", "gym",         "gymnasium", "scipy",    "pandas"};
  StringRef Root = text(Callee).take_until([](char C) { return C == '.'; });
  StringRef Class = Name.rsplit('.').second;
  if (!Imports.count(Root) || Class.empty() || !(Class.front() >= 'A' && Class.front() <= 'Z'))
    return false;
  StringRef Package = Name.take_until([](char C) { return C == '.'; });
  return llvm::none_of(NotModules,
                       [&](const char *Other) { return Package == Other; });
}

std::optional<Frontend::ModuleInfo>
Frontend::moduleNamed(TSNode N, const Scope &S, unsigned Depth) const {
  if (S.Owner && S.Owner != this)
    return S.Owner->moduleNamed(N, S, Depth);
  std::string Key = bindingKey(N, S);
  // An instance's attribute (model.discriminator) is named as written.
  if (Key.empty() && type(N) == "attribute" &&
      type(field(N, "object")) == "identifier")
    Key = text(N).str();
  if (Key.empty() || Depth > 8)
    return std::nullopt;
  // In a method read for its receiver (model.style_params()): self's X is
  // the receiver's part X.
  if (StringRef(Key).starts_with("self.") && !Files.ReceiverKeys.empty())
    return ModuleInfo{Files.ReceiverKeys.back() + Key.substr(4),
                      ParameterSaves::Always};
  std::optional<ModuleInfo> Result;
  for (const Value &V : valuesOf(N, S)) {
    ReadingReturn Reading(Files, V);
    Frontend &In = *V.In->Owner;
    TSNode Right = V.Node;
    // Another name (a parameter: the module the caller passes, under the
    // caller's name).
    if (type(Right) == "identifier" || type(Right) == "attribute") {
      // The first value that names one, as optimizerNamed takes: with
      // several call sites, a module and its optimizer come from the same.
      if (!Result)
        Result = In.moduleNamed(Right, *V.In, Depth + 1);
      continue;
    }
    // model.to(device), model.cuda(), model.train(): the module itself.
    if (TSNode Callee = field(Right, "function");
        type(Callee) == "attribute" &&
        returnsItsModule(text(field(Callee, "attribute"))) &&
        (type(field(Callee, "object")) == "identifier" ||
         type(field(Callee, "object")) == "attribute")) {
      if (!Result)
        Result = In.moduleNamed(field(Callee, "object"), *V.In, Depth + 1);
      continue;
    }
    if (const WrapperRule *Rule = In.constructedWrapper(Right)) {
      // DDP(module): the wrapped module's parameters.
      TSNode Module = namedChild(field(Right, "arguments"),
                                 Rule->ModuleConstructorArgument.value_or(0));
      if (std::optional<ModuleInfo> Inner =
              type(Module) == "call"
                  ? std::optional<ModuleInfo>()
                  : In.moduleNamed(Module, *V.In, Depth + 1))
        return Inner;
      if (std::optional<ParameterSaves> Made =
              In.constructedModule(Module, *V.In, Depth + 1))
        return ModuleInfo{In.moduleKey(Key, Module), *Made};
      continue;
    }
    if (!Result)
      if (std::optional<ParameterSaves> Made =
              In.constructedModule(Right, *V.In, Depth + 1))
        Result = ModuleInfo{In.moduleKey(Key, Right), *Made};
  }
  return Result;
}

std::optional<Frontend::OptimizerInfo>
Frontend::optimizerNamed(TSNode N, const Scope &S, unsigned Depth) const {
  if (S.Owner && S.Owner != this)
    return S.Owner->optimizerNamed(N, S, Depth);
  if (Depth > 8)
    return std::nullopt;
  for (const Value &V : valuesOf(N, S)) {
    ReadingReturn Reading(Files, V);
    TSNode Right = V.Node;
    // Another name (a parameter: the optimizer the caller passes).
    if (type(Right) == "identifier" || type(Right) == "attribute") {
      if (std::optional<OptimizerInfo> Passed =
              V.In->Owner->optimizerNamed(Right, *V.In, Depth + 1))
        return Passed;
      continue;
    }
    if (type(Right) != "call")
      continue;
    const Frontend &In = *V.In->Owner;
    TSNode Arguments = field(Right, "arguments");
    TSNode Params = namedChild(Arguments, 0);
    bool Fused = false;
    forEachNamedChild(Arguments, [&](TSNode A) {
      if (type(A) != "keyword_argument")
        return;
      StringRef Keyword = text(field(A, "name"));
      if (Keyword == "params")
        Params = field(A, "value");
      if (Keyword == "fused")
        Fused = type(field(A, "value")) == "true";
    });
    std::vector<std::string> Keys = In.parameterSources(Params, *V.In);
    if (Keys.empty())
      continue;
    OptimizerInfo Info;
    Info.ParametersOf = std::move(Keys);
    Info.Class = In.qualifiedName(field(Right, "function"));
    // Measured (docs/ground-truth.md): every torch.optim step bumps the
    // version counters of the parameters it updates, except fused ones.
    Info.Bumps = !Fused;
    Info.Assumed = !StringRef(Info.Class).starts_with("torch.optim.");
    return Info;
  }
  return std::nullopt;
}

std::optional<Frontend::OptimizerInfo>
Frontend::steppedOptimizer(TSNode Call, const Scope &S, TSNode &Stepped) const {
  // opt.step(), else scaler.step(opt); a fused one too (Bumps false).
  Stepped = field(field(Call, "function"), "object");
  std::optional<OptimizerInfo> Optimizer = optimizerNamed(Stepped, S);
  if (!Optimizer) {
    Stepped = namedChild(field(Call, "arguments"), 0);
    Optimizer = optimizerNamed(Stepped, S);
  }
  return Optimizer;
}

std::optional<std::string> Frontend::moduleOrPartKey(TSNode N,
                                                     const Scope &S) const {
  // model.module is the DDP object's wrapped module: model's parameters.
  // A part of a module named by its root (net.encoder: "net@...encoder"),
  // as a forward on net saves it; else the longest prefix that names one.
  TSNode Root = N;
  std::string Parts;
  while (type(Root) == "attribute") {
    StringRef Attribute = text(field(Root, "attribute"));
    if (Attribute != "module")
      Parts = ("." + Attribute + Parts).str();
    Root = field(Root, "object");
  }
  if (type(Root) == "identifier" && text(Root) != "self")
    if (std::optional<ModuleInfo> Module = moduleNamed(Root, S))
      return Module->Key + Parts;
  std::string Part;
  while (type(N) == "attribute") {
    if (std::optional<ModuleInfo> Module = moduleNamed(N, S))
      return Module->Key + Part;
    StringRef Attribute = text(field(N, "attribute"));
    if (Attribute != "module")
      Part = ("." + Attribute + Part).str();
    N = field(N, "object");
  }
  if (std::optional<ModuleInfo> Module = moduleNamed(N, S))
    return Module->Key + Part;
  return std::nullopt;
}

std::vector<std::string> Frontend::parameterSources(TSNode Params,
                                                    const Scope &S,
                                                    unsigned Depth) const {
  std::vector<std::string> Keys;
  bool Followed = Depth < 8;
  auto Add = [&](TSNode Part) {
    std::vector<std::string> More = parameterSources(Part, S, Depth + 1);
    Followed &= !More.empty();
    Keys.insert(Keys.end(), More.begin(), More.end());
  };
  StringRef Kind = type(Params);
  if (!Followed) {
  } else if (Kind == "call") {
    TSNode Callee = field(Params, "function");
    TSNode Arguments = field(Params, "arguments");
    std::string Called = qualifiedName(Callee);
    StringRef Last = StringRef(Called).rsplit('.').second;
    if (Last.empty())
      Last = Called;
    if (type(Callee) == "attribute" &&
        text(field(Callee, "attribute")) == "parameters") {
      std::vector<std::string> Of =
          moduleKeys(field(Callee, "object"), S, Depth + 1);
      Followed &= !Of.empty();
      Keys.insert(Keys.end(), Of.begin(), Of.end());
    } else if (std::vector<std::string> Of =
                   methodParameterSources(Params, S, Depth + 1);
               !Of.empty()) {
      Keys.insert(Keys.end(), Of.begin(), Of.end());
    } else if (Called == "itertools.chain" || Last == "chain" ||
               Called == "list" || Called == "tuple") {
      forEachNamedChild(Arguments, Add);
    } else if (Called == "filter") {
      Add(namedChild(Arguments, 1));
    } else {
      Followed = false;
    }
  } else if (Kind == "binary_operator" && text(field(Params, "operator")) == "+") {
    Add(field(Params, "left"));
    Add(field(Params, "right"));
  } else if (Kind == "list" || Kind == "tuple") {
    // Parameter groups: [{"params": ..., "lr": ...}, ...].
    forEachNamedChild(Params, [&](TSNode Item) {
      if (type(Item) != "dictionary") {
        Add(Item);
        return;
      }
      forEachNamedChild(Item, [&](TSNode Pair) {
        TSNode Key = field(Pair, "key");
        if (type(Pair) == "pair" && type(Key) == "string" &&
            text(Key).trim("'\"") == "params")
          Add(field(Pair, "value"));
      });
    });
  } else if (Kind == "list_comprehension" || Kind == "generator_expression") {
    forEachNamedChild(Params, [&](TSNode Clause) {
      if (type(Clause) == "for_in_clause")
        Add(field(Clause, "right"));
    });
  } else if (Kind == "identifier" || Kind == "attribute") {
    std::vector<Value> Values = valuesOf(Params, S);
    if (Values.empty())
      Followed = false;
    for (const Value &V : Values) {
      // params = [] before params += ...: adds nothing.
      if ((type(V.Node) == "list" || type(V.Node) == "tuple") &&
          ts_node_named_child_count(V.Node) == 0 && Values.size() > 1)
        continue;
      ReadingReturn Reading(Files, V);
      std::vector<std::string> More =
          V.In->Owner->parameterSources(V.Node, *V.In, Depth + 1);
      Followed &= !More.empty();
      Keys.insert(Keys.end(), More.begin(), More.end());
    }
  } else if (Kind == "parenthesized_expression") {
    Add(namedChild(Params, 0));
  } else {
    Followed = false;
  }
  if (!Followed)
    Keys.clear();
  return Keys;
}

std::vector<std::string> Frontend::moduleKeys(TSNode N, const Scope &S,
                                              unsigned Depth) const {
  if (std::optional<std::string> Key = moduleOrPartKey(N, S))
    return {*Key};
  std::vector<std::string> Keys;
  if (type(N) != "identifier" || Depth > 8)
    return Keys;
  for (const Value &V : valuesOf(N, S)) {
    ReadingReturn Reading(Files, V);
    std::vector<std::string> More =
        V.In->Owner->moduleKeys(V.Node, *V.In, Depth + 1);
    if (More.empty())
      return {};
    Keys.insert(Keys.end(), More.begin(), More.end());
  }
  return Keys;
}

std::vector<std::string>
Frontend::methodParameterSources(TSNode Call, const Scope &S,
                                 unsigned Depth) const {
  TSNode Callee = field(Call, "function");
  if (type(Callee) != "attribute" || Depth > 8)
    return {};
  std::optional<std::string> Receiver =
      moduleOrPartKey(field(Callee, "object"), S);
  if (!Receiver)
    return {};
  // The receiver's class is not always followed (a factory's model wrapped
  // in DataParallel): then the one module class of the run defining the
  // method.
  const Scope *Method = calledFunction(Callee, S);
  if (!Method) {
    StringRef Name = text(field(Callee, "attribute"));
    for (const auto &Entry : Files.ByPath)
      for (const auto &Function : Entry.second->Functions) {
        const Scope *Candidate = Function.second;
        if (isNull(Candidate->Class) || Candidate->Parent ||
            StringRef(Function.first()).rsplit('.').second != Name ||
            !Entry.second->isModuleClass(Candidate->Class))
          continue;
        if (Method && Method != Candidate)
          return {};
        Method = Candidate;
      }
  }
  if (!Method || isNull(Method->Class))
    return {};
  Files.ReceiverKeys.push_back(*Receiver);
  auto Done = llvm::make_scope_exit([&] { Files.ReceiverKeys.pop_back(); });
  std::vector<std::string> Keys;
  for (TSNode R : Method->Bindings) {
    if (type(R) != "return_statement")
      continue;
    std::vector<std::string> More = Method->Owner->parameterSources(
        namedChild(R, 0), *Method, Depth + 1);
    if (More.empty())
      return {};
    Keys.insert(Keys.end(), More.begin(), More.end());
  }
  return Keys;
}

std::vector<Frontend::ReachedForward>
Frontend::forwardsReaching(TSNode N, const Scope &S) const {
  std::vector<ReachedForward> Found;
  llvm::DenseSet<const void *> Seen;
  std::function<void(TSNode, const Scope &, unsigned)> Walk =
      [&](TSNode E, const Scope &In, unsigned Depth) {
        if (isNull(E) || Depth > 10 || !Seen.insert(E.id).second)
          return;
        const Frontend &Of = *In.Owner;
        StringRef Kind = type(E);
        if (Kind == "identifier" || Kind == "attribute") {
          if (Of.bindingKey(E, In).empty() && Kind == "attribute")
            return Walk(field(E, "object"), In, Depth + 1);
          for (const Value &V : Of.valuesOf(E, In)) {
            ReadingReturn Reading(Files, V);
            Walk(V.Node, *V.In, Depth + 1);
          }
          return;
        }
        if (Kind == "call") {
          TSNode Callee = field(E, "function");
          StringRef Method = type(Callee) == "attribute"
                                 ? Of.text(field(Callee, "attribute"))
                                 : "";
          if (Method == "detach" || Method == "item" || Method == "numpy")
            return;
          TSNode Object = Method == "forward" ? field(Callee, "object") : Callee;
          if ((type(Object) == "identifier" || type(Object) == "attribute") &&
              !Of.Imports.count(Of.text(Object).split('.').first))
            if (std::optional<ModuleInfo> Module = Of.moduleNamed(Object, In))
              Found.push_back({E, &In, *Module});
          if (type(Callee) == "attribute")
            Walk(field(Callee, "object"), In, Depth + 1);
          forEachNamedChild(field(E, "arguments"), [&](TSNode A) {
            Walk(type(A) == "keyword_argument" ? field(A, "value") : A, In,
                 Depth + 1);
          });
          return;
        }
        if (Kind == "binary_operator" || Kind == "parenthesized_expression" ||
            Kind == "unary_operator" || Kind == "subscript")
          forEachNamedChild(E, [&](TSNode Child) { Walk(Child, In, Depth + 1); });
      };
  for (const Value &V : valuesOf(N, S)) {
    ReadingReturn Reading(Files, V);
    Walk(V.Node, *V.In, 0);
  }
  return Found;
}

bool Frontend::isGradFree(TSNode N, const Scope &S, unsigned Depth) const {
  if (isNull(N) || Depth > 8)
    return false;
  auto AllChildren = [&](TSNode Of) {
    bool All = true;
    forEachNamedChild(Of, [&](TSNode Child) {
      All = All && (type(Child) == "comment" ||
                    isGradFree(Child, S, Depth + 1));
    });
    return All;
  };
  StringRef Kind = type(N);
  if (Kind == "integer" || Kind == "float" || Kind == "string" ||
      Kind == "true" || Kind == "false" || Kind == "none")
    return true;
  if (Kind == "parenthesized_expression" || Kind == "unary_operator" ||
      Kind == "binary_operator" || Kind == "tuple" || Kind == "list")
    return AllChildren(N);
  if (Kind == "keyword_argument") {
    if (text(field(N, "name")) == "requires_grad")
      return type(field(N, "value")) == "false";
    return isGradFree(field(N, "value"), S, Depth + 1);
  }
  if (Kind == "subscript")
    return isGradFree(field(N, "value"), S, Depth + 1);
  if (Kind == "call") {
    TSNode Callee = field(N, "function");
    std::string Name = qualifiedName(Callee);
    // The factories make tensors that do not require grad (unless
    // requires_grad=True, an argument checked below); *_like ones too.
    static const char *const Factories[] = {
        "randn",  "rand",  "randint", "randperm", "zeros", "ones",
        "full",   "empty", "arange",  "linspace", "eye",   "tensor",
        "normal", "bernoulli"};
    if (StringRef Function = Name; Function.consume_front("torch.")) {
      bool Factory = Function.consume_back("_like");
      for (const char *F : Factories)
        Factory |= Function == F;
      if (!Factory)
        return false;
      bool Ok = true;
      forEachNamedChild(field(N, "arguments"), [&](TSNode A) {
        if (type(A) == "keyword_argument" &&
            text(field(A, "name")) == "requires_grad")
          Ok = Ok && type(field(A, "value")) == "false";
      });
      return Ok;
    }
    // Moves, casts and views of such a tensor.
    static const char *const SameTensor[] = {
        "to",   "cuda",    "cpu",       "float",      "half",  "double",
        "view", "reshape", "flatten",   "unsqueeze",  "squeeze",
        "permute", "transpose", "contiguous", "clone", "detach"};
    if (type(Callee) != "attribute")
      return false;
    StringRef Method = text(field(Callee, "attribute"));
    bool Known = false;
    for (const char *M : SameTensor)
      Known |= Method == M;
    return (Known && isGradFree(field(Callee, "object"), S, Depth + 1) &&
            AllChildren(field(N, "arguments"))) ||
           Method == "detach";
  }
  if (Kind != "identifier")
    return false;
  return boundOnlyTo(N, S, [&](TSNode Right) {
    return isGradFree(Right, S, Depth + 1);
  });
}

bool Frontend::isPythonValue(TSNode N, const Scope &S, unsigned Depth) const {
  if (isNull(N) || Depth > 8)
    return false;
  StringRef Kind = type(N);
  if (Kind == "integer" || Kind == "float" || Kind == "string" ||
      Kind == "true" || Kind == "false" || Kind == "none" ||
      Kind == "dictionary" || Kind == "dictionary_comprehension" ||
      Kind == "set" || Kind == "set_comprehension" || Kind == "list" ||
      Kind == "list_comprehension" ||
      Kind == "not_operator" || Kind == "concatenated_string")
    return true;
  if (Kind == "parenthesized_expression" || Kind == "unary_operator" ||
      Kind == "binary_operator") {
    bool All = true;
    forEachNamedChild(N, [&](TSNode Child) {
      All = All && isPythonValue(Child, S, Depth + 1);
    });
    return All;
  }
  // x.shape[0], x.size(1): sizes are Python ints.
  if (Kind == "subscript") {
    TSNode Of = field(N, "value");
    return type(Of) == "attribute" && text(field(Of, "attribute")) == "shape";
  }
  if (Kind == "call") {
    TSNode Callee = field(N, "function");
    if (type(Callee) == "attribute") {
      StringRef Method = text(field(Callee, "attribute"));
      return Method == "item" || Method == "size" || Method == "dim" ||
             Method == "numel" || Method == "tolist";
    }
    static const char *const Builtins[] = {
        "len",  "int",   "float", "bool",  "str",         "dict", "list",
        "set",  "tuple", "range", "round", "defaultdict", "OrderedDict"};
    StringRef Name = text(Callee);
    return type(Callee) == "identifier" &&
           llvm::any_of(Builtins, [&](const char *B) { return Name == B; });
  }
  if (Kind != "identifier")
    return false;
  return boundOnlyTo(N, S, [&](TSNode Right) {
    return isPythonValue(Right, S, Depth + 1);
  });
}

template <typename Pred>
bool Frontend::boundOnlyTo(TSNode N, const Scope &S, Pred Holds) const {
  // Every binding of the name in S is an assignment of a value that Holds;
  // a parameter, a loop variable or a with-target is not known.
  for (TSNode Parameter : S.Parameters)
    if (!isNull(Parameter) && text(Parameter) == text(N))
      return false;
  bool Assigned = false, Free = true;
  forEachInScope(S.Node, [&](TSNode B) {
    StringRef BKind = type(B);
    if (!Free)
      return;
    if (BKind == "assignment" || BKind == "augmented_assignment") {
      bool Binds = false;
      forEachTarget(field(B, "left"), [&](TSNode Target) {
        Binds |= type(Target) == "identifier" && text(Target) == text(N);
      });
      if (Binds) {
        Assigned = true;
        Free = Holds(field(B, "right"));
      }
      return;
    }
    TSNode Target{};
    if (BKind == "for_statement" || BKind == "for_in_clause")
      Target = field(B, "left");
    else if (BKind == "as_pattern_target" || BKind == "named_expression")
      Target = BKind == "named_expression" ? field(B, "name") : B;
    if (isNull(Target))
      return;
    forEachTarget(Target, [&](TSNode T) {
      if (type(T) == "identifier" && text(T) == text(N))
        Free = false;
    });
  });
  return Assigned && Free;
}

bool Frontend::isModuleClass(TSNode Class, unsigned Depth) const {
  if (isNull(Class) || Depth > 8)
    return false;
  bool Found = false;
  forEachNamedChild(field(Class, "superclasses"), [&](TSNode Base) {
    std::string Qualified = qualifiedName(Base);
    if (Found || StringRef(Qualified).starts_with("torch.nn.") ||
        StringRef(Qualified).ends_with("LightningModule")) {
      Found = true;
      return;
    }
    if (auto Known = Classes.find(Qualified); Known != Classes.end()) {
      Found = isModuleClass(Known->second, Depth + 1);
      return;
    }
    if (auto [File, Rest] = imported(Qualified); File) {
      auto Imported = File->Classes.find(Rest);
      if (Imported != File->Classes.end())
        Found = File->isModuleClass(Imported->second, Depth + 1);
    }
  });
  return Found;
}

} // namespace detail
} // namespace python
} // namespace ddpguard
