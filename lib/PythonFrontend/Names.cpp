//===- Names.cpp - imports, DDP objects and their bindings ------------------===//

#include "Frontend.h"
#include "llvm/ADT/Hashing.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Support/Path.h"

namespace ddpguard {
namespace python {
namespace detail {

using namespace model;
using llvm::StringRef;

void Frontend::collectImport(TSNode N) {
  StringRef Kind = type(N);
  if (Kind == "import_statement") {
    forEachNamedChild(N, [&](TSNode Name) {
      if (type(Name) == "aliased_import") {
        Imports[text(field(Name, "alias"))] = text(field(Name, "name")).str();
      } else {
        // `import torch.nn.parallel` binds `torch`.
        StringRef Dotted = text(Name);
        StringRef First = Dotted.split('.').first;
        Imports[First] = First.str();
      }
    });
    return;
  }
  if (Kind == "import_from_statement") {
    TSNode Module = field(N, "module_name");
    if (isNull(Module))
      return;
    std::string From = text(Module).str();
    if (type(Module) == "relative_import") {
      // from .models import X: the module path of a file of the run,
      // "/src/pkg/models:X" (imported() reads it).
      StringRef Dots = From;
      StringRef Rest = Dots.ltrim('.');
      size_t Level = Dots.size() - Rest.size();
      StringRef Directory = llvm::sys::path::parent_path(Path);
      for (size_t I = 1; I < Level; ++I)
        Directory = llvm::sys::path::parent_path(Directory);
      std::string Inside = Rest.str();
      std::replace(Inside.begin(), Inside.end(), '.', '/');
      From = (Directory + (Inside.empty() ? "" : "/" + Inside)).str() + ":";
    }
    forEachNamedChild(N, [&](TSNode Child) {
      if (type(Child) == "wildcard_import")
        StarImports.push_back(From);
    });
    for (uint32_t I = 0, E = ts_node_child_count(N); I < E; ++I) {
      const char *Field = ts_node_field_name_for_child(N, I);
      if (!Field || StringRef(Field) != "name")
        continue;
      TSNode Name = ts_node_child(N, I);
      std::string Separator = StringRef(From).ends_with(":") ? "" : ".";
      if (type(Name) == "aliased_import")
        Imports[text(field(Name, "alias"))] =
            From + Separator + text(field(Name, "name")).str();
      else
        Imports[text(Name)] = From + Separator + text(Name).str();
    }
  }
}

void Frontend::collect(TSNode N, Scope &Current, TSNode Class,
                       StringRef Prefix) {
  forEachNamedChild(N, [&](TSNode Child) {
    StringRef Kind = type(Child);
    if (Kind == "decorated_definition") {
      TSNode Definition = field(Child, "definition");
      if (!isNull(Definition))
        Child = Definition;
      Kind = type(Child);
    }
    if (Kind == "function_definition" || Kind == "lambda") {
      auto S = std::make_unique<Scope>();
      S->Owner = this;
      S->Node = Child;
      S->Parameters = parameterNames(Child);
      // Methods see self; functions nested in them are not methods.
      S->Class = Class;
      if (&Current != ModuleScope)
        S->Parent = &Current;
      S->Name = (Prefix + (Kind == "lambda" ? StringRef("<lambda>")
                                            : text(field(Child, "name"))))
                    .str();
      Scope &New = *S;
      Scopes.push_back(std::move(S));
      if (Kind == "function_definition") {
        Functions[New.Name] = &New;
        collect(field(Child, "body"), New, TSNode{}, New.Name + ".");
      } else {
        // embed = lambda v: model(v) is called as embed(x).
        TSNode Parent = ts_node_parent(Child);
        if (type(Parent) == "assignment" &&
            type(field(Parent, "left")) == "identifier")
          Functions[(Prefix + text(field(Parent, "left"))).str()] = &New;
        // The body is one expression, which may itself be the call.
        TSNode Body = field(Child, "body");
        if (type(Body) == "call")
          New.Bindings.push_back(Body);
        collect(Body, New, Class, Prefix);
      }
      return;
    }
    if (Kind == "class_definition") {
      Classes[text(field(Child, "name"))] = Child;
      collect(field(Child, "body"), Current, Child,
              (Prefix + text(field(Child, "name")) + ".").str());
      return;
    }
    if (Kind == "import_statement" || Kind == "import_from_statement") {
      collectImport(Child);
      return;
    }
    if (Kind == "global_statement" && &Current != ModuleScope) {
      forEachNamedChild(Child, [&](TSNode Name) {
        if (type(Name) == "identifier")
          GlobalWriters[text(Name)].push_back(&Current);
      });
      return;
    }
    if (Kind == "assignment" || Kind == "return_statement" || Kind == "call" ||
        Kind == "augmented_assignment" || Kind == "for_statement")
      Current.Bindings.push_back(Child);
    collect(Child, Current, Class, Prefix);
  });
}

std::pair<Frontend *, std::string>
Frontend::importedFile(StringRef Qualified) const {
  if (Files.ByPath.size() < 2)
    return {nullptr, ""};
  // The longest module path of a file of the run that the name starts
  // with: relative imports name it ("/src/pkg:models.build"), absolute ones
  // from the importing file's folder first (the script's folder is first on
  // sys.path), then from its project's source roots, else the one file of
  // the run that can be that module.
  auto [Base, Dotted] = Qualified.split(':');
  bool Relative = Qualified.contains(':');
  if (!Relative) {
    Dotted = Qualified;
    Base = llvm::sys::path::parent_path(Path);
  }
  for (size_t End = Dotted.rfind('.'); End != StringRef::npos;
       End = End == 0 ? StringRef::npos : Dotted.rfind('.', End - 1)) {
    StringRef Module = Dotted.take_front(End), Rest = Dotted.drop_front(End + 1);
    std::string Inside = Module.str();
    std::replace(Inside.begin(), Inside.end(), '.', '/');
    if (Frontend *Found = Files.ByPath.lookup((Base + "/" + Inside).str()))
      return {Found, Rest.str()};
    if (Relative)
      continue;
    for (const std::string &Root : SourceRoots)
      if (Frontend *Found = Files.ByPath.lookup(Root + "/" + Inside))
        return {Found, Rest.str()};
    auto Named = Files.ByName.find(Module);
    if (Named != Files.ByName.end() && Named->second.size() == 1)
      return {Named->second.front(), Rest.str()};
  }
  if (Relative && !Dotted.empty())
    if (Frontend *Package = Files.ByPath.lookup(Base))
      return {Package, Dotted.str()};
  return {nullptr, ""};
}

std::pair<Frontend *, std::string>
Frontend::imported(StringRef Qualified) const {
  std::pair<Frontend *, std::string> Found = importedFile(Qualified);
  // A package's __init__.py that imports the name from another file
  // (`from .modelfree.sac import SACPolicy`): the file that defines it.
  for (unsigned Hops = 0; Found.first && Hops < 4; ++Hops) {
    const Frontend *File = Found.first;
    StringRef Rest = Found.second;
    StringRef First = Rest.take_until([](char C) { return C == '.'; });
    if (First.empty() || File->Functions.count(First) ||
        File->Classes.count(First))
      break;
    auto It = File->Imports.find(First);
    if (It == File->Imports.end())
      break;
    std::pair<Frontend *, std::string> Further = File->importedFile(
        It->second + Rest.drop_front(First.size()).str());
    if (!Further.first || Further.first == File)
      break;
    Found = std::move(Further);
  }
  return Found;
}

std::string Frontend::qualifiedName(TSNode N) const {
  StringRef Kind = type(N);
  if (Kind == "identifier") {
    StringRef Name = text(N);
    auto It = Imports.find(Name);
    if (It != Imports.end())
      return It->second;
    // `from models.gan import *`: a function or class of that file the
    // file does not define itself.
    if (!StarImports.empty() && !Functions.count(Name) && !Classes.count(Name))
      for (const std::string &From : StarImports) {
        std::string Qualified =
            From + (StringRef(From).ends_with(":") ? "" : ".") + Name.str();
        if (auto [File, Rest] = importedFile(Qualified);
            File && File != this &&
            (File->Functions.count(Rest) || File->Classes.count(Rest)))
          return Qualified;
      }
    return Name.str();
  }
  if (Kind == "attribute") {
    std::string Object = qualifiedName(field(N, "object"));
    if (Object.empty())
      return "";
    return Object + "." + text(field(N, "attribute")).str();
  }
  return "";
}

const WrapperRule *Frontend::constructedWrapper(TSNode Call) const {
  if (type(Call) != "call")
    return nullptr;
  std::string Name = qualifiedName(field(Call, "function"));
  // The class lives in torch.nn.parallel.distributed and is exported by
  // torch.nn.parallel; both spellings name it.
  StringRef Module = "torch.nn.parallel.distributed.";
  if (StringRef(Name).starts_with(Module))
    Name = "torch.nn.parallel." + Name.substr(Module.size());
  if (Name.find('.') == std::string::npos)
    return nullptr;
  return Rules.find(Name);
}

Binding Frontend::objectOf(TSNode Call, const WrapperRule &Rule,
                           const Scope &S) const {
  ObjectInfo Info;
  TSNode Arguments = field(Call, "arguments");
  TSNode Module{};
  forEachNamedChild(Arguments, [&](TSNode Argument) {
    if (type(Argument) == "keyword_argument"
            ? text(field(Argument, "name")) == "module"
            : isNull(Module) && Rule.ModuleConstructorArgument == 0u)
      Module = type(Argument) == "keyword_argument" ? field(Argument, "value")
                                                     : Argument;
  });
  std::string Why;
  Buffers Has = moduleBuffers(Module, S, 0, Why);
  // An unknown module may have buffers: the safe side, said in a note,
  // unless the options say otherwise.
  Info.HasBuffers = Has == Buffers::Yes ||
                    (Has == Buffers::Unknown && Options.AssumeModulesHaveBuffers);
  // The setting as the version spells it; the newer keyword wins when both
  // are given, as in PyTorch 2.13.
  const BroadcastSetting &Setting = Rule.Broadcast;
  std::optional<bool> Broadcast;
  // The argument that decides, if one does.
  TSNode DecidingValue{};
  StringRef DecidingKeyword;
  unsigned Positional = 0;
  forEachNamedChild(Arguments, [&](TSNode Argument) {
    std::optional<bool> Literal;
    TSNode Value = Argument;
    bool Matches = false;
    if (type(Argument) == "keyword_argument") {
      StringRef Keyword = text(field(Argument, "name"));
      Value = field(Argument, "value");
      for (StringRef Setter : Setting.setters())
        if (Keyword == Setter &&
            (Setter == Setting.Setter ||
             !(Options.Version < Setting.Renamed->From)))
          Matches = !Broadcast || Setter != Setting.Setter;
    } else if (type(Argument) != "list_splat" &&
               type(Argument) != "dictionary_splat") {
      Matches = Setting.SettingKind ==
                    BroadcastSetting::Kind::ConstructorArgument &&
                Positional == Setting.Argument;
      ++Positional;
    }
    if (!Matches)
      return;
    DecidingValue = Value;
    DecidingKeyword = type(Argument) == "keyword_argument"
                          ? text(field(Argument, "name"))
                          : StringRef(Setting.Setter);
    if (type(Value) == "false")
      Literal = false;
    else if (type(Value) == "true")
      Literal = true;
    // A value only a run can tell leaves the broadcast on: the safe side.
    Broadcast = Literal.value_or(true);
  });
  Info.BroadcastsBuffers = Broadcast.value_or(Setting.Default) &&
                           !Rule.preservesVersionCounters(Options.Version);
  Binding Made{Info, positionOf(Call), Has == Buffers::Unknown ? Why : ""};
  Made.BuffersSavedIfInputRequiresGrad = Has == Buffers::IfInputRequiresGrad;
  Made.File = Path;
  forEachNamedChild(Arguments, [&](TSNode Argument) {
    StringRef Keyword = text(field(Argument, "name"));
    if (type(Argument) == "keyword_argument" &&
        (Keyword == "find_unused_parameters" || Keyword == "static_graph") &&
        type(field(Argument, "value")) != "false")
      Made.ReducerOption = Keyword.str();
  });
  // The fix: the keyword that decides set to False where it is given, else
  // added after the last argument.
  Made.BroadcastKeyword = Setting.setterAt(Options.Version).str();
  if (!isNull(DecidingValue)) {
    Made.BroadcastFix = {ts_node_start_byte(DecidingValue),
                         ts_node_end_byte(DecidingValue) -
                             ts_node_start_byte(DecidingValue),
                         "False"};
    Made.BroadcastKeyword = DecidingKeyword.str();
  } else {
    TSNode Last{};
    forEachNamedChild(Arguments, [&](TSNode A) {
      if (type(A) != "comment")
        Last = A;
    });
    Made.BroadcastFix.Text = Made.BroadcastKeyword + "=False";
    if (isNull(Last)) {
      Made.BroadcastFix.Offset = ts_node_end_byte(Arguments) - 1;
    } else {
      Made.BroadcastFix.Offset = ts_node_end_byte(Last);
      Made.BroadcastFix.Text = ", " + Made.BroadcastFix.Text;
    }
  }
  return Made;
}

std::string Frontend::bindingKey(TSNode N, const Scope &S) const {
  if (type(N) == "identifier")
    return text(N).str();
  if (type(N) == "attribute" && !isNull(S.Class)) {
    TSNode Object = field(N, "object");
    if (type(Object) == "identifier" && text(Object) == "self")
      return ("self." + text(field(N, "attribute"))).str();
  }
  return "";
}

const Binding *Frontend::ddpBinding(StringRef Key, const Scope &S) const {
  if (S.Owner && S.Owner != this)
    return S.Owner->ddpBinding(Key, S);
  if (Key.starts_with("self.")) {
    if (isNull(S.Class))
      return nullptr;
    // Set in a method of the class, of a base (a base's init_training
    // wraps self.net_d) or of a subclass, in any file of the run.
    for (auto [Class, In] : classFamily(S.Class)) {
      auto Attributes = In->ClassAttributes.find(ts_node_start_byte(Class));
      if (Attributes == In->ClassAttributes.end())
        continue;
      auto It = Attributes->second.find(Key);
      if (It != Attributes->second.end())
        return &It->second;
    }
    return nullptr;
  }
  for (const Scope *In = &S; In; In = In->Parent) {
    auto It = In->DDPNames.find(Key);
    if (It != In->DDPNames.end())
      return &It->second;
  }
  if (ModuleScope && &S != ModuleScope) {
    auto It = ModuleScope->DDPNames.find(Key);
    if (It != ModuleScope->DDPNames.end())
      return &It->second;
  }
  return nullptr;
}

/// Calls Each(target, value, element) for each name an assignment's left
/// side binds: `a, b = X(), Y()` binds a to X() and b to Y(); `a, b = f()`
/// binds a to element 0 of f().
static void forEachBoundValue(
    TSNode Left, TSNode Right,
    llvm::function_ref<void(TSNode, TSNode, std::optional<unsigned>)> Each,
    std::optional<unsigned> Element = std::nullopt) {
  auto IsSequence = [](StringRef Kind) {
    return Kind == "pattern_list" || Kind == "tuple_pattern" ||
           Kind == "list_pattern" || Kind == "tuple" || Kind == "list" ||
           Kind == "expression_list";
  };
  if (type(Left) == "parenthesized_expression") {
    forEachBoundValue(namedChild(Left, 0), Right, Each, Element);
    return;
  }
  if (!IsSequence(type(Left))) {
    Each(Left, Right, Element);
    return;
  }
  bool Paired = IsSequence(type(Right)) && ts_node_named_child_count(Left) ==
                                               ts_node_named_child_count(Right);
  for (uint32_t I = 0, E = ts_node_named_child_count(Left); I < E; ++I)
    forEachBoundValue(ts_node_named_child(Left, I),
                      Paired ? ts_node_named_child(Right, I) : Right, Each,
                      Paired ? std::nullopt : std::optional<unsigned>(I));
}

std::vector<TSNode> Frontend::assignedTo(TSNode N, const Scope &S) const {
  std::vector<TSNode> Found;
  std::string Key = bindingKey(N, S);
  if (Key.empty())
    return Found;
  auto Pair = [&](TSNode Left, TSNode Right, const Scope &In) {
    forEachBoundValue(Left, Right, [&](TSNode Target, TSNode Value,
                                       std::optional<unsigned>) {
      if (bindingKey(Target, In) == Key)
        Found.push_back(Value);
    });
  };
  auto Scan = [&](const std::vector<TSNode> &Bindings, const Scope &In) {
    for (TSNode A : Bindings)
      if (type(A) == "assignment")
        Pair(field(A, "left"), field(A, "right"), In);
  };
  if (StringRef(Key).starts_with("self.")) {
    Scope Methods;
    Methods.Class = S.Class;
    std::vector<TSNode> Assignments;
    forEachInScopeOfClass(S.Class, [&](TSNode A) {
      if (type(A) == "assignment")
        Assignments.push_back(A);
    });
    Scan(Assignments, Methods);
    return Found;
  }
  Scan(S.Bindings, S);
  if (Found.empty() && ModuleScope && &S != ModuleScope)
    Scan(ModuleScope->Bindings, *ModuleScope);
  if (Found.empty() || &S == ModuleScope)
    for (const Scope *Writer : GlobalWriters.lookup(Key))
      Scan(Writer->Bindings, *Writer);
  return Found;
}

std::vector<std::pair<TSNode, const Frontend *>>
Frontend::classAndBases(TSNode Class) const {
  std::vector<std::pair<TSNode, const Frontend *>> Chain = {{Class, this}};
  for (size_t I = 0; I < Chain.size() && Chain.size() < 16; ++I) {
    auto [Of, In] = Chain[I];
    forEachNamedChild(field(Of, "superclasses"), [&](TSNode Base) {
      std::string Qualified = In->qualifiedName(Base);
      if (auto Known = In->Classes.find(Qualified); Known != In->Classes.end())
        Chain.push_back({Known->second, In});
      else if (auto [File, Rest] = In->imported(Qualified); File)
        if (auto Imported = File->Classes.find(Rest);
            Imported != File->Classes.end())
          Chain.push_back({Imported->second, File});
    });
  }
  return Chain;
}

std::vector<std::pair<TSNode, const Frontend *>>
Frontend::classFamily(TSNode Class) const {
  // Asked for every self attribute read: found once per class.
  auto [Cached, New] = Files.FamilyOf.try_emplace(Class.id);
  if (!New)
    return Cached->second;
  if (!Files.SubclassesBuilt) {
    Files.SubclassesBuilt = true;
    llvm::SmallPtrSet<Frontend *, 8> Seen;
    for (const auto &Entry : Files.ByPath) {
      Frontend *File = Entry.second;
      if (!Seen.insert(File).second)
        continue;
      for (const auto &Named : File->Classes) {
        llvm::SmallPtrSet<const void *, 8> Bases;
        for (const auto &Base : File->classAndBases(Named.second))
          if (!ts_node_eq(Base.first, Named.second) &&
              Bases.insert(Base.first.id).second)
            Files.SubclassesOf[Base.first.id].push_back({Named.second, File});
      }
    }
  }
  std::vector<std::pair<TSNode, const Frontend *>> Family =
      classAndBases(Class);
  auto Subclasses = Files.SubclassesOf.find(Class.id);
  if (Subclasses != Files.SubclassesOf.end())
    llvm::append_range(Family, Subclasses->second);
  Files.FamilyOf[Class.id] = Family;
  return Family;
}

std::vector<Value> Frontend::selfAttributeValues(TSNode OfClass,
                                                 StringRef Key) const {
  // Assigned in any method of the class or of its bases, and read in the
  // scope of that method (self.opt = opt binds __init__'s parameter).
  std::vector<Value> Values;
  for (auto [Class, In] : classFamily(OfClass))
    for (const auto &Method : In->Scopes) {
      if (!ts_node_eq(Method->Class, Class) || Method->Parent)
        continue;
      for (TSNode A : Method->Bindings) {
        // self.add_module("discriminator", d) sets self.discriminator.
        if (type(A) == "call" &&
            In->text(field(A, "function")) == "self.add_module") {
          TSNode Name = namedChild(field(A, "arguments"), 0);
          if (type(Name) == "string" &&
              ("self." + In->text(Name).trim("'\"")).str() == Key)
            Values.push_back(
                {namedChild(field(A, "arguments"), 1), Method.get()});
          continue;
        }
        if (type(A) != "assignment")
          continue;
        forEachBoundValue(field(A, "left"), field(A, "right"),
                          [&](TSNode Target, TSNode Value,
                              std::optional<unsigned> Element) {
                            if (In->bindingKey(Target, *Method) == Key)
                              Values.push_back({Value, Method.get(), Element});
                          });
      }
    }
  return throughFactories(std::move(Values));
}

std::vector<const Scope *> Frontend::constructorsOf(TSNode N, const Scope &S,
                                                   unsigned Depth) const {
  // The __init__ of each class of the run whose instance N may hold,
  // through names, parameters and factories.
  std::vector<const Scope *> Found;
  // Values lead to calls whose functions are asked for again: bounded.
  if (Depth > 4 || Files.InstanceLookups > 3)
    return Found;
  ++Files.InstanceLookups;
  auto Done = llvm::make_scope_exit([&] { --Files.InstanceLookups; });
  for (const Value &V : valuesOf(N, S)) {
    ReadingReturn Reading(Files, V);
    StringRef Kind = type(V.Node);
    if (Kind == "identifier" || Kind == "attribute") {
      std::vector<const Scope *> More =
          V.In->Owner->constructorsOf(V.Node, *V.In, Depth + 1);
      Found.insert(Found.end(), More.begin(), More.end());
      continue;
    }
    if (Kind != "call")
      continue;
    // Discriminator(...).to(device): the instance itself.
    TSNode Made = V.Node;
    while (type(Made) == "call" &&
           type(field(Made, "function")) == "attribute" &&
           returnsItsModule(
               V.In->Owner->text(field(field(Made, "function"), "attribute"))))
      Made = field(field(Made, "function"), "object");
    if (type(Made) != "call")
      continue;
    const Scope *Init = V.In->Owner->calledFunctionByName(
        field(Made, "function"), *V.In);
    if (Init && !isNull(Init->Class) &&
        StringRef(Init->Name).ends_with(".__init__"))
      Found.push_back(Init);
  }
  return Found;
}

std::vector<Value> Frontend::instanceAttributeValues(TSNode N,
                                                     const Scope &S) const {
  // obj.X, where obj holds an instance of a class of the run: what the
  // class's methods assign to self.X (model.discriminator, model.opt_d).
  std::vector<Value> Out;
  TSNode Object = field(N, "object");
  if (type(Object) != "identifier" || text(Object) == "self")
    return Out;
  std::string Key = ("self." + text(field(N, "attribute"))).str();
  for (const Scope *Init : constructorsOf(Object, S)) {
    std::vector<Value> Of =
        Init->Owner->selfAttributeValues(Init->Class, Key);
    Out.insert(Out.end(), Of.begin(), Of.end());
  }
  return Out;
}

std::vector<Value> Frontend::valuesOf(TSNode N, const Scope &S) const {
  std::vector<Value> Values;
  std::string Key = bindingKey(N, S);
  if (Key.empty() && type(N) == "attribute")
    return instanceAttributeValues(N, S);
  if (StringRef(Key).starts_with("self."))
    return selfAttributeValues(S.Class, Key);
  auto Pair = [&](TSNode Left, TSNode Right, const Scope &In,
                  std::optional<unsigned>) {
    forEachBoundValue(Left, Right, [&](TSNode Target, TSNode Value,
                                       std::optional<unsigned> Element) {
      if (bindingKey(Target, In) == Key)
        Values.push_back({Value, &In, Element});
    });
  };
  auto Scan = [&](const Scope &In) {
    for (TSNode A : In.Bindings) {
      StringRef Kind = type(A);
      if (Kind == "assignment")
        Pair(field(A, "left"), field(A, "right"), In, std::nullopt);
      // params += [...]: the list grows by the right side.
      if (Kind == "augmented_assignment" &&
          text(field(A, "operator")) == "+=" &&
          bindingKey(field(A, "left"), In) == Key)
        Values.push_back({field(A, "right"), &In});
      if (Kind == "for_statement" && bindingKey(field(A, "left"), In) == Key)
        for (TSNode Element : iteratedElements(field(A, "right"), In))
          Values.push_back({Element, &In});
    }
  };
  Scan(S);
  if ((Values.empty() || &S == ModuleScope) && ModuleScope) {
    if (&S != ModuleScope)
      Scan(*ModuleScope);
    // A global assigned by functions under `global` (init_model()).
    for (const Scope *Writer : GlobalWriters.lookup(Key))
      Scan(*Writer);
  }
  if (!Values.empty())
    return throughFactories(std::move(Values));
  if (type(N) != "identifier" ||
      type(S.Node) != "function_definition")
    return Values;
  const std::vector<TSNode> &Parameters = S.Parameters;
  auto Named = llvm::find_if(Parameters, [&](TSNode P) {
    return !isNull(P) && text(P) == text(N);
  });
  if (Named == Parameters.end())
    return Values;
  unsigned Index = Named - Parameters.begin();
  std::vector<std::pair<TSNode, const Scope *>> Calls = callSitesOf(S);
  // Read for one call's returned value: that call's argument only.
  for (auto It = Files.ReadingReturnOf.rbegin();
       It != Files.ReadingReturnOf.rend(); ++It)
    if ((*It)->Caller->Owner->calledFunction(field((*It)->Call, "function"),
                                             *(*It)->Caller) == &S) {
      Calls = {{(*It)->Call, (*It)->Caller}};
      break;
    }
  for (const auto &[Call, Caller] : Calls)
    Caller->Owner->forEachCallArgument(
        Call, *Caller, S, [&](TSNode Argument, unsigned I, const Scope &In) {
          if (I == Index)
            Values.push_back({Argument, &In});
        });
  return throughFactories(std::move(Values));
}

std::vector<TSNode> Frontend::iteratedElements(TSNode Iterable,
                                               const Scope &S,
                                               unsigned Depth) const {
  // A loop over a list or tuple written out (or a slice of a name bound to
  // one) takes each element; over X.modules() or X.children(), parts of X:
  // X stands for them.
  std::vector<TSNode> Elements;
  StringRef Kind = type(Iterable);
  if (Kind == "list" || Kind == "tuple") {
    forEachNamedChild(Iterable, [&](TSNode E) {
      if (type(E) != "comment")
        Elements.push_back(E);
    });
  } else if (Kind == "subscript" && Depth < 4 &&
             type(field(Iterable, "subscript")) == "slice") {
    for (TSNode Right : assignedTo(field(Iterable, "value"), S)) {
      std::vector<TSNode> More = iteratedElements(Right, S, Depth + 1);
      Elements.insert(Elements.end(), More.begin(), More.end());
    }
  } else if (Kind == "call") {
    TSNode Callee = field(Iterable, "function");
    StringRef Method =
        type(Callee) == "attribute" ? text(field(Callee, "attribute")) : "";
    if (Method == "modules" || Method == "children")
      Elements.push_back(field(Callee, "object"));
  }
  return Elements;
}

std::vector<Value> Frontend::throughFactories(std::vector<Value> Values,
                                              unsigned Depth) const {
  std::vector<Value> Out;
  for (Value &V : Values) {
    const Scope *Called =
        type(V.Node) == "call" && Depth < 4
            ? V.In->Owner->calledFunction(field(V.Node, "function"), *V.In)
            : nullptr;
    if (!Called || StringRef(Called->Name).ends_with(".__init__")) {
      Out.push_back(std::move(V));
      continue;
    }
    std::vector<Value> Returned;
    for (TSNode R : Called->Bindings) {
      if (type(R) != "return_statement")
        continue;
      TSNode Result = namedChild(R, 0);
      StringRef Kind = type(Result);
      if (V.Element && (Kind == "expression_list" || Kind == "tuple")) {
        if (*V.Element < ts_node_named_child_count(Result))
          Returned.push_back({ts_node_named_child(Result, *V.Element), Called,
                              std::nullopt, V.Node, V.In});
      } else if (!isNull(Result)) {
        Returned.push_back({Result, Called, V.Element, V.Node, V.In});
      }
    }
    if (Returned.empty())
      Out.push_back(std::move(V));
    for (Value &R : throughFactories(std::move(Returned), Depth + 1))
      Out.push_back(std::move(R));
  }
  return Out;
}

const std::vector<std::pair<TSNode, const Scope *>> &
Frontend::callSitesOf(const Scope &Function) const {
  if (!Files.CallSitesBuilt) {
    Files.CallSitesBuilt = true;
    // The calls a name resolves first; then the methods called on
    // instances, whose values the calls found by name bind.
    std::vector<std::pair<Frontend *, std::pair<TSNode, const Scope *>>>
        Unresolved;
    llvm::SmallPtrSet<Frontend *, 8> Seen;
    for (const auto &Entry : Files.ByPath) {
      Frontend *File = Entry.second;
      if (!Seen.insert(File).second)
        continue;
      for (const auto &Owned : File->Scopes)
        for (TSNode B : Owned->Bindings) {
          if (type(B) != "call")
            continue;
          if (const Scope *Called =
                  File->calledFunctionByName(field(B, "function"), *Owned))
            Files.CallSites[Called].push_back({B, Owned.get()});
          else
            Unresolved.push_back({File, {B, Owned.get()}});
        }
    }
    std::vector<std::pair<const Scope *, std::pair<TSNode, const Scope *>>>
        Methods;
    for (const auto &[File, Site] : Unresolved)
      if (const Scope *Called = File->calledMethodOfInstance(
              field(Site.first, "function"), *Site.second))
        Methods.push_back({Called, Site});
    for (auto &[Called, Site] : Methods)
      Files.CallSites[Called].push_back(Site);
  }
  static const std::vector<std::pair<TSNode, const Scope *>> None;
  auto It = Files.CallSites.find(&Function);
  return It == Files.CallSites.end() ? None : It->second;
}

std::string Frontend::moduleKey(StringRef Name, TSNode Construction) const {
  // No dot in the place: a part of the module is the key, a dot and the
  // attribute.
  return (Name + "@" + std::to_string(llvm::hash_value(Path)) + ":" +
          std::to_string(ts_node_start_byte(Construction)))
      .str();
}

bool Frontend::isDDPValue(TSNode N, const Scope &S, Binding *Info) const {
  if (S.Owner && S.Owner != this)
    return S.Owner->isDDPValue(N, S, Info);
  if (isNull(N))
    return false;
  if (type(N) == "parenthesized_expression")
    return isDDPValue(namedChild(N, 0), S, Info);
  if (const WrapperRule *Rule = constructedWrapper(N)) {
    if (Info)
      *Info = objectOf(N, *Rule, S);
    return true;
  }
  if (type(N) == "call") {
    // torch.compile(model) calls the DDP object it compiles.
    if (qualifiedName(field(N, "function")) == "torch.compile")
      return isDDPValue(namedChild(field(N, "arguments"), 0), S, Info);
    // A factory of the file: build_model(), self.build_model().
    const Scope *Called = calledFunction(field(N, "function"), S);
    if (!Called)
      return false;
    const llvm::StringMap<Binding> &Made = Called->Owner->Factories;
    auto It = Made.find(Called->Name);
    if (It == Made.end())
      return false;
    if (Info)
      *Info = It->second;
    return true;
  }
  std::string Key = bindingKey(N, S);
  const Binding *Bound = Key.empty() ? nullptr : ddpBinding(Key, S);
  if (Bound && Info)
    *Info = *Bound;
  return Bound;
}

Scope *Frontend::calledFunction(TSNode Callee, const Scope &S) const {
  if (Scope *Found = calledFunctionByName(Callee, S))
    return Found;
  return Files.CallSitesBuilt ? calledMethodOfInstance(Callee, S) : nullptr;
}

Scope *Frontend::calledMethodOfInstance(TSNode Callee, const Scope &S) const {
  // loss_f.call_optimize(...) where loss_f holds an instance of a class of
  // the run: that class's method (or its bases'). Asked once per call.
  if (type(Callee) != "attribute")
    return nullptr;
  TSNode Object = field(Callee, "object");
  if (type(Object) != "identifier" && bindingKey(Object, S).empty())
    return nullptr;
  if (Files.MethodNames.empty()) {
    for (const auto &Entry : Files.ByPath)
      for (const auto &Function : Entry.second->Functions)
        if (!isNull(Function.second->Class))
          Files.MethodNames.insert(
              StringRef(Function.first()).rsplit('.').second);
    Files.MethodNames.insert("");
  }
  StringRef Method = text(field(Callee, "attribute"));
  if (!Files.MethodNames.count(Method) || text(Object) == "self")
    return nullptr;
  auto [Cached, New] = Files.MethodCalls.try_emplace(Callee.id, nullptr);
  if (!New)
    return Cached->second;
  Scope *Found = nullptr;
  for (const Scope *Init : constructorsOf(Object, S)) {
    for (auto [Class, In] : Init->Owner->classAndBases(Init->Class))
      if (Scope *M = In->Functions.lookup(
              (In->text(field(Class, "name")) + "." + Method).str())) {
        Found = M;
        break;
      }
    if (Found)
      break;
  }
  return Files.MethodCalls[Callee.id] = Found;
}

Scope *Frontend::calledFunctionByName(TSNode Callee, const Scope &S) const {
  std::string Name = qualifiedName(Callee);
  if (StringRef(Name).starts_with("self.") && !isNull(S.Class)) {
    StringRef Method = StringRef(Name).drop_front(4);
    // The class's method, else the nearest base's (a base class's
    // take_optimisation_step called from a subclass).
    for (auto [Class, In] : classAndBases(S.Class))
      if (Scope *Found = In->Functions.lookup(
              (In->text(field(Class, "name")) + Method).str()))
        return Found;
    Name = (text(field(S.Class, "name")) + Method).str();
  }
  if (Scope *Found = Functions.lookup(Name))
    return Found;
  if (Scope *Found = Functions.lookup(S.Name + "." + Name))
    return Found;
  if (const Partial *P = calledPartial(Callee, S))
    return P->Function;
  // A class's construction runs its __init__.
  if (Classes.count(Name))
    return Functions.lookup(Name + ".__init__");
  auto [File, Rest] = imported(Name);
  if (!File)
    return nullptr;
  if (Scope *Found = File->Functions.lookup(Rest))
    return Found;
  return File->Classes.count(Rest) ? File->Functions.lookup(Rest + ".__init__")
                                   : nullptr;
}

bool Frontend::makesPartial(TSNode Call) const {
  // The name's text first: qualifiedName builds a string (measured: 3% of a
  // check when asked of every call).
  TSNode Callee = field(Call, "function");
  return type(Call) == "call" && text(Callee).ends_with("partial") &&
         qualifiedName(Callee) == "functools.partial";
}

void Frontend::collectPartials() {
  for (auto &Owned : Scopes) {
    Scope &S = *Owned;
    for (TSNode N : S.Bindings) {
      TSNode Left = field(N, "left"), Right = field(N, "right");
      if (type(N) != "assignment" || type(Left) != "identifier" ||
          !makesPartial(Right))
        continue;
      Scope *Function =
          calledFunction(namedChild(field(Right, "arguments"), 0), S);
      if (!Function)
        continue;
      std::string Key = &S == ModuleScope
                            ? text(Left).str()
                            : (S.Name + "." + text(Left)).str();
      Partials[Key] = Partial{Function, Right, &S};
    }
  }
}

const Frontend::Partial *Frontend::calledPartial(TSNode Callee,
                                                 const Scope &S) const {
  if (type(Callee) != "identifier" || Partials.empty())
    return nullptr;
  for (const std::string &Key :
       {(S.Name + "." + text(Callee)).str(), text(Callee).str()}) {
    auto It = Partials.find(Key);
    if (It != Partials.end())
      return &It->second;
  }
  return nullptr;
}

const std::vector<Frontend::HelperForward> &
Frontend::helperForwards(const Scope &Helper) {
  if (Helper.Owner != this)
    return Helper.Owner->helperForwards(Helper);
  auto [It, Inserted] = HelperForwards.try_emplace(&Helper);
  if (!Inserted)
    return It->second;
  const std::vector<TSNode> &Parameters = Helper.Parameters;
  std::vector<HelperForward> Found;
  for (TSNode N : Helper.Bindings) {
    if (type(N) != "call")
      continue;
    TSNode Object = field(N, "function");
    if (type(Object) == "attribute" &&
        text(field(Object, "attribute")) == "forward")
      Object = field(Object, "object");
    std::string Key = bindingKey(Object, Helper);
    if (Key.empty() || !isDDPValue(Object, Helper, nullptr))
      continue;
    HelperForward Forward{Key, std::nullopt};
    for (unsigned I = 0; I < Parameters.size(); ++I)
      if (!isNull(Parameters[I]) && text(Parameters[I]) == Key)
        Forward.Parameter = I;
    Found.push_back(Forward);
  }
  return HelperForwards[&Helper] = std::move(Found);
}

bool Frontend::bindDDPNames() {
  bool Changed = false;
  auto Bind = [&](TSNode Target, const Binding &Info, Scope &S) {
    std::string Key = bindingKey(Target, S);
    if (Key.empty())
      return;
    llvm::StringMap<Binding> &Names =
        StringRef(Key).starts_with("self.")
            ? ClassAttributes[ts_node_start_byte(S.Class)]
            : S.DDPNames;
    if (Names.try_emplace(Key, Info).second)
      Changed = true;
  };
  for (auto &Owned : Scopes) {
    Scope &S = *Owned;
    for (TSNode N : S.Bindings) {
      StringRef Kind = type(N);
      Binding Info;
      if (Kind == "assignment" &&
          type(field(N, "right")) == "call" &&
          type(field(field(N, "right"), "function")) == "attribute") {
        bool Prepared = false;
        forEachPrepared(field(N, "left"), field(N, "right"), S,
                        [&](TSNode Target, const Binding &Object) {
                          Prepared = true;
                          Bind(Target, Object, S);
                        });
        if (Prepared)
          continue;
      }
      if (Kind == "assignment" && isDDPValue(field(N, "right"), S, &Info)) {
        forEachTarget(field(N, "left"),
                      [&](TSNode Target) { Bind(Target, Info, S); });
      } else if (Kind == "return_statement" && &S != ModuleScope &&
                 type(S.Node) == "function_definition") {
        TSNode Value = namedChild(N, 0);
        if (!isNull(Value) && isDDPValue(Value, S, &Info) &&
            Factories.try_emplace(S.Name, Info).second)
          Changed = true;
      } else if (Kind == "call") {
        // A DDP object passed to a function of the file, or bound by a
        // functools.partial of one, binds its parameter.
        TSNode Callee = field(N, "function");
        bool MakesPartial = makesPartial(N);
        if (MakesPartial)
          Callee = namedChild(field(N, "arguments"), 0);
        Scope *Function = calledFunction(Callee, S);
        if (!Function || type(Function->Node) != "function_definition")
          continue;
        Scope &Called = *Function;
        const std::vector<TSNode> &Parameters = Called.Parameters;
        auto BindParameter = [&](TSNode Value, unsigned I, const Scope &In) {
          if (type(Parameters[I]) == "identifier" &&
              isDDPValue(Value, In, &Info) &&
              Called.DDPNames.try_emplace(text(Parameters[I]), Info).second)
            Changed = true;
        };
        if (MakesPartial)
          forEachArgument(
              N, Parameters,
              !isNull(Called.Class) && type(Callee) == "attribute",
              [&](TSNode Value, unsigned I) { BindParameter(Value, I, S); },
              /*Leading=*/1);
        else
          forEachCallArgument(N, S, Called, BindParameter);
      }
    }
  }
  return Changed;
}

} // namespace detail
} // namespace python
} // namespace ddpguard
