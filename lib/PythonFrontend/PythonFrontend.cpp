//===- PythonFrontend.cpp -------------------------------------------------===//
//
// Two passes over the syntax tree. The first binds names: imports (so that
// `DDP`, `nn.parallel.DistributedDataParallel` and the full name all resolve
// to the rule's type), the DDP constructions, the factory functions that
// return one, and the parameters that receive one from a call in the file.
// Bindings are per scope and flow-insensitive: a name that holds a DDP object
// anywhere in its scope is one throughout. The second lowers each scope to
// an EventGraph: statements to blocks (if, for, while, try, with, break,
// continue, return), expressions to the values their history comes from.
//
//===----------------------------------------------------------------------===//

#include "PythonFrontend.h"
#include "Model/HazardAnalysis.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Path.h"
#include <tree_sitter/api.h>
#include <map>
#include <memory>
#include <cstring>
#include <functional>
#include <optional>

extern "C" const TSLanguage *tree_sitter_python(void);

namespace ddpguard {
namespace python {

using namespace model;
using llvm::StringRef;

namespace {

/// A DDP object a name is bound to: its settings and where it was made.
struct Binding {
  ObjectInfo Info;
  Position Constructed;
  /// Why the wrapped module is assumed to have buffers, when it is.
  std::string BuffersAssumption;
  /// The edit that turns the construction's broadcast off.
  std::string BroadcastKeyword;
  Edit BroadcastFix;
  /// A forward saves the buffers only when one of its inputs requires grad
  /// (Info.HasBuffers is then false).
  bool BuffersSavedIfInputRequiresGrad = false;
  /// The file of the construction and of BroadcastFix.
  std::string File;
  /// The construction sets a reducer option (find_unused_parameters,
  /// static_graph) other than to False: the keyword, else empty.
  std::string ReducerOption;
};

/// Whether a module has buffers that its forward saves, as far as the file
/// tells: IfInputRequiresGrad when its forward uses them only against what
/// derives from its inputs (x / self.std), so that they are saved only when
/// an input requires grad.
enum class Buffers { No, IfInputRequiresGrad, Yes, Unknown };

Buffers either(Buffers A, Buffers B) {
  if (A == Buffers::Yes || B == Buffers::Yes)
    return Buffers::Yes;
  if (A == Buffers::Unknown || B == Buffers::Unknown)
    return Buffers::Unknown;
  return A == Buffers::No && B == Buffers::No ? Buffers::No
                                              : Buffers::IfInputRequiresGrad;
}

/// A module inside another: what reaches it may derive from the outer
/// module's parameters, so its buffers may be saved whatever the input.
Buffers nested(Buffers B) {
  return B == Buffers::IfInputRequiresGrad ? Buffers::Yes : B;
}

class Frontend;

/// A function, method, lambda or the module's own code.
struct Scope {
  /// The frontend of the file the scope is in.
  Frontend *Owner = nullptr;
  TSNode Node;
  /// The enclosing class for methods, else null.
  TSNode Class;
  /// The enclosing function or lambda, whose names a nested one reads;
  /// null for the module and for functions directly in it or in a class.
  const Scope *Parent = nullptr;
  std::string Name;
  /// The scope's own assignments, returns and calls (not those of nested
  /// functions), in order: what binds names.
  std::vector<TSNode> Bindings;
  /// Names bound to a DDP object in this scope, with the construction's
  /// object settings.
  llvm::StringMap<Binding> DDPNames;
};

// A missing field is a null node, which tree-sitter's accessors do not take:
// in a tree with errors any field may be missing.
bool isNull(TSNode N) { return ts_node_is_null(N); }
StringRef type(TSNode N) { return isNull(N) ? "" : ts_node_type(N); }
/// Names are string literals: their ids are looked up once per thread (by
/// name, tree-sitter compares every field name; measured, 5% of a check).
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
TSNode namedChild(TSNode N, uint32_t I) {
  return isNull(N) || I >= ts_node_named_child_count(N)
             ? TSNode{}
             : ts_node_named_child(N, I);
}
template <typename Fn> void forEachNamedChild(TSNode N, Fn Each) {
  if (isNull(N))
    return;
  for (uint32_t I = 0, E = ts_node_named_child_count(N); I < E; ++I)
    Each(ts_node_named_child(N, I));
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

/// The parameter names of a function or lambda, in order.
static std::vector<TSNode> parameterNames(TSNode Function) {
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


/// The files checked together: a name one file imports from another (a
/// factory, a helper, a class) is followed there.
/// SavedOperands.def, the table the C++ frontend reads (which operands or
/// result an operation saves for backward), without its Clang side.
enum class SavedOpForm { Any, Method, Function, Functional };
enum class SavedOpResult { View, New, Constant };
struct SavedOp {
  StringRef Name;
  SavedOpForm Form;
  SavedOpResult Result;
  /// "i:jk" saves operand i, "r:jk" the result, if operand j or k requires
  /// grad.
  StringRef Saves;
};
const SavedOp SavedOps[] = {
#define SAVED_OP(Name, Form, Result, Saves)                                    \
  {Name, SavedOpForm::Form, SavedOpResult::Result, Saves},
#include "Frontend/SavedOperands.def"
};

/// The entry for an operation called in this form (Any stands for all).
const SavedOp *findSavedOp(StringRef Name, SavedOpForm Called) {
  for (const SavedOp &Op : SavedOps)
    if (Op.Name == Name &&
        (Op.Form == SavedOpForm::Any || Op.Form == Called))
      return &Op;
  return nullptr;
}

/// One rule of SavedOp::Saves: the operand saved (none: the result) if one
/// of Triggers requires grad.
struct SaveRule {
  std::optional<unsigned> Operand;
  llvm::SmallVector<unsigned, 3> Triggers;
};
llvm::SmallVector<SaveRule, 2> saveRules(StringRef Saves) {
  llvm::SmallVector<SaveRule, 2> Rules;
  llvm::SmallVector<StringRef, 4> Parts;
  Saves.split(Parts, ' ', -1, /*KeepEmpty=*/false);
  for (StringRef Part : Parts) {
    auto [Saved, Triggers] = Part.split(':');
    SaveRule Rule;
    if (Saved != "r")
      Rule.Operand = Saved.front() - '0';
    for (char Trigger : Triggers)
      Rule.Triggers.push_back(Trigger - '0');
    Rules.push_back(std::move(Rule));
  }
  return Rules;
}

/// Tensor methods that write their tensor in place: PyTorch's trailing
/// underscore, less those that change only autograd's view of it (as the
/// C++ frontend's matchTensorWrite).
bool isInPlaceMethod(StringRef Name) {
  return Name.size() > 1 && Name.ends_with("_") && !Name.starts_with("_") &&
         Name != "requires_grad_" && Name != "detach_" &&
         Name != "share_memory_";
}

/// Tensor methods whose result shares the tensor's storage and version
/// counter: the table's views, and conversions that return the tensor
/// itself when there is nothing to convert (as `to`).
bool isViewMethod(StringRef Name) {
  if (const SavedOp *Op = findSavedOp(Name, SavedOpForm::Method))
    return Op->Result == SavedOpResult::View;
  return llvm::is_contained({"float", "double", "half", "bfloat16", "cuda",
                             "cpu", "type", "movedim", "swapaxes", "unflatten",
                             "unfold"},
                            Name);
}

/// In-place methods whose out-of-place twin takes the same arguments:
/// x.mul_(2) is x = x.mul(2). Each twin was confirmed with hasattr on
/// torch 2.11.0 and 2.15.0; fill_, zero_, copy_, normal_, uniform_ and
/// fill_diagonal_ have none, and bernoulli_ and resize_ have twins that do
/// something else.
bool hasOutOfPlaceTwin(StringRef Method) {
  return llvm::is_contained(
      {"add_", "sub_", "mul_", "div_", "clamp_", "clamp_min_", "clamp_max_",
       "clip_", "relu_", "sigmoid_", "tanh_", "exp_", "log_", "abs_", "neg_",
       "sqrt_", "rsqrt_", "pow_", "masked_fill_", "index_put_", "index_fill_",
       "index_add_", "index_copy_", "scatter_", "scatter_add_", "lerp_",
       "addcmul_", "addcdiv_", "square_", "reciprocal_", "floor_", "round_",
       "sign_", "sin_", "cos_", "nan_to_num_", "true_divide_", "multiply_",
       "subtract_", "divide_", "masked_scatter_", "put_", "addmm_", "addmv_",
       "baddbmm_"},
      Method);
}

struct Run {
  /// The source of each file's tree, for the text of nodes of other files.
  std::map<const TSTree *, StringRef> Sources;
  /// Each file's frontend by its module path: the absolute path without
  /// ".py" ("/src/pkg/models"; a package's __init__.py is "/src/pkg").
  llvm::StringMap<Frontend *> ByPath;
  /// By every dotted name the file could be imported as ("models",
  /// "pkg.models", ...): the files that could be it.
  llvm::StringMap<std::vector<Frontend *>> ByName;
};

class Frontend {
public:
  Frontend(StringRef Path, StringRef Source, const TSTree *Tree,
           const RuleSet &Rules, const CheckOptions &Options, Run &Files)
      : Path(Path), Source(Source), Tree(Tree), Rules(Rules),
        Options(Options), Files(Files) {}

  /// Pass 1, over every file: scopes and names; then partials, which may
  /// name a function of another file.
  void collectFile(TSNode Root);
  void collectPartials();
  /// One round of binding names to DDP objects; true if one was bound.
  bool bindDDPNames();
  /// Pass 2: the file's findings.
  CheckResult findings(TSNode Root);

private:
  StringRef text(TSNode N) const {
    if (isNull(N))
      return StringRef();
    StringRef Of = N.tree == Tree ? Source : Files.Sources.at(N.tree);
    return Of.slice(ts_node_start_byte(N), ts_node_end_byte(N));
  }
  /// The file of the run a dotted name this file spells is in, and the rest
  /// of the name ("build_model" of "models.build_model"); null when no file
  /// of the run is that module.
  std::pair<Frontend *, std::string> imported(StringRef Qualified) const;

  // Pass 1: names.
  void collectImport(TSNode N);
  /// One walk of the tree: scopes, classes, imports and each scope's
  /// Bindings.
  void collect(TSNode N, Scope &Current, TSNode Class, StringRef Prefix);
  /// The dotted name an expression spells, with its first part resolved
  /// through the imports; empty for anything but names and attributes.
  std::string qualifiedName(TSNode N) const;
  /// The rule of the wrapper a call constructs, or null.
  const WrapperRule *constructedWrapper(TSNode Call) const;
  /// The object a DDP construction call makes.
  Binding objectOf(TSNode Call, const WrapperRule &Rule, const Scope &S) const;
  /// Whether the module expression N evaluates to has buffers; Why says
  /// what was not followed when the answer is Unknown.
  Buffers moduleBuffers(TSNode N, const Scope &S, unsigned Depth,
                        std::string &Why) const;
  Buffers classBuffers(TSNode Class, unsigned Depth, std::string &Why) const;
  /// How the class's forward uses the buffers it registers (Names).
  Buffers ownBuffersSaved(TSNode Class, const llvm::StringSet<> &Names) const;
  /// Whether the value of expression N is a DDP object in scope S; fills
  /// Info when it is.
  bool isDDPValue(TSNode N, const Scope &S, Binding *Info) const;
  /// A plain module a name is bound to, as far as steps go: the key of its
  /// parameter set (a DDP object's is its wrapped module's) and whether its
  /// forward saves a parameter (docs/ground-truth.md, "Which parameters a
  /// module's forward saves"). NoParameters: an activation, dropout, ...;
  /// Never: parameters no forward saves (Embedding).
  enum class ParameterSaves { NoParameters, Never, IfInputRequiresGrad, Always };
  struct ModuleInfo {
    std::string Key;
    ParameterSaves Saves = ParameterSaves::Always;
  };
  std::optional<ModuleInfo> moduleNamed(TSNode N, const Scope &S,
                                        unsigned Depth = 0) const;
  std::optional<ParameterSaves> constructedModule(TSNode Call, const Scope &S,
                                                  unsigned Depth) const;
  /// An optimizer a name is bound to: Adam(model.parameters(), ...).
  struct OptimizerInfo {
    std::string ParametersOf;
    std::string Class;
    bool Bumps = true;
    bool Assumed = false;
  };
  std::optional<OptimizerInfo> optimizerNamed(TSNode N, const Scope &S) const;
  /// The right sides assigned to the name or self attribute N in S (and the
  /// module's code, or the class's methods).
  std::vector<TSNode> assignedTo(TSNode N, const Scope &S) const;
  /// Whether expression N surely does not require grad in S: literals,
  /// torch's factories (torch.randn, torch.zeros_like, ...), what is
  /// computed from them only, and names bound only to such.
  bool isGradFree(TSNode N, const Scope &S, unsigned Depth = 0) const;
  /// The key a name or self-attribute is bound by in S: "x", "self.x".
  std::string bindingKey(TSNode N, const Scope &S) const;
  const Binding *ddpBinding(StringRef Key, const Scope &S) const;
  /// The function of the file a call's callee names (self.m in a method
  /// names the class's m; a nested function or a lambda bound to a name is
  /// found from its enclosing function), or null.
  Scope *calledFunction(TSNode Callee, const Scope &S) const;
  /// The forwards a helper of the file runs on DDP objects it is handed
  /// (a parameter), shares (self.X) or reads (a global), in order: each
  /// call of the helper runs them, so the caller sees them at the call.
  struct HelperForward {
    std::string Key;
    std::optional<unsigned> Parameter;
  };
  const std::vector<HelperForward> &helperForwards(const Scope &Helper);
  /// Calls Each(value, parameter index) for each argument of Call that goes
  /// to one of Parameters (names): by keyword, or by position after the Skip
  /// leading parameters the call does not pass (self, through an object).
  /// Leading positional arguments are not passed to a parameter (the
  /// function functools.partial binds).
  template <typename Fn>
  void forEachArgument(TSNode Call, const std::vector<TSNode> &Parameters,
                       unsigned Skip, Fn Each, unsigned Leading = 0) const;
  /// functools.partial(f, a, ...) bound to a name: a call of the name calls
  /// f with a, ... (read where the partial was made) before its own.
  struct Partial {
    Scope *Function = nullptr;
    TSNode Call;
    const Scope *Where = nullptr;
  };
  /// Names bound to a partial of a function of the file, keyed as Functions.
  llvm::StringMap<Partial> Partials;
  const Partial *calledPartial(TSNode Callee, const Scope &S) const;
  /// Whether Call is functools.partial(...).
  bool makesPartial(TSNode Call) const;
  /// Calls Each(value, parameter index, scope the value is read in) for each
  /// argument Call passes to Called, a partial's bound arguments first.
  template <typename Fn>
  void forEachCallArgument(TSNode Call, const Scope &Caller,
                           const Scope &Called, Fn Each) const;
  std::map<const Scope *, std::vector<HelperForward>> HelperForwards;

  // Pass 2: graphs.
  void analyse(Scope &S, CheckResult &Result);
  /// A class deriving from torch.nn.Module (through classes of the run).
  bool isModuleClass(TSNode Class, unsigned Depth = 0) const;
  /// The edit that runs the statement of the first forward inside
  /// `with <Object>.no_sync():`, or why none keeps the meaning.
  std::string noSyncFix(TSNode Statement, TSNode Later, TSNode Block,
                        TSNode LaterBlock, bool SecondHasGrad,
                        StringRef Object, const Binding &Bound,
                        Edit &Fix) const;

  /// The file's absolute path.
  std::string Path;
  StringRef Source;
  const TSTree *Tree;
  const RuleSet &Rules;
  const CheckOptions &Options;
  Run &Files;
  /// Local name -> the dotted name it was imported as.
  llvm::StringMap<std::string> Imports;
  std::vector<std::unique_ptr<Scope>> Scopes;
  Scope *ModuleScope = nullptr;
  /// Per class node (by start byte): self attributes bound to DDP objects.
  std::map<uint32_t, llvm::StringMap<Binding>> ClassAttributes;
  /// Functions of the file by name (methods as Class.name), and the
  /// factories among them: those that return a DDP object.
  llvm::StringMap<Scope *> Functions;
  llvm::StringMap<Binding> Factories;
  /// Classes of the file by name.
  llvm::StringMap<TSNode> Classes;
  /// Lowering's moduleNamed of self attributes, by class (its start byte).
  std::map<std::pair<uint32_t, std::string>, std::optional<ModuleInfo>>
      SelfModules;
  /// The names and self attributes the file binds to a torch.nn module
  /// built with inplace=True ("self.act" → "torch.nn.ReLU"), found once.
  const llvm::StringMap<std::string> &inPlaceModules();
  std::optional<llvm::StringMap<std::string>> InPlaceModules;
  friend class Lowering;
};

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
    if (Kind == "assignment" || Kind == "return_statement" || Kind == "call")
      Current.Bindings.push_back(Child);
    collect(Child, Current, Class, Prefix);
  });
}

std::pair<Frontend *, std::string>
Frontend::imported(StringRef Qualified) const {
  if (Files.ByPath.size() < 2)
    return {nullptr, ""};
  // The longest module path of a file of the run that the name starts
  // with: relative imports name it ("/src/pkg:models.build"), absolute ones
  // from the importing file's folder first (the script's folder is first on
  // sys.path), else the one file of the run that can be that module.
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
    auto Named = Files.ByName.find(Module);
    if (Named != Files.ByName.end() && Named->second.size() == 1)
      return {Named->second.front(), Rest.str()};
  }
  if (Relative && !Dotted.empty())
    if (Frontend *Package = Files.ByPath.lookup(Base))
      return {Package, Dotted.str()};
  return {nullptr, ""};
}

std::string Frontend::qualifiedName(TSNode N) const {
  StringRef Kind = type(N);
  if (Kind == "identifier") {
    auto It = Imports.find(text(N));
    return It != Imports.end() ? It->second : text(N).str();
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

/// torch.nn classes with buffers (running statistics): the rest of
/// torch.nn has none. Containers hold what their arguments hold.
static Buffers torchNNBuffers(StringRef Class, bool TrackingOff,
                              bool TrackingOn) {
  if (Class.contains("BatchNorm"))
    return TrackingOff ? Buffers::No : Buffers::Yes;
  if (Class.contains("InstanceNorm"))
    return TrackingOn ? Buffers::Yes : Buffers::No;
  return Buffers::No;
}

/// torchvision's model builders: those without batch norm or other buffers.
static Buffers torchvisionBuffers(StringRef Builder) {
  static const char *const WithoutBuffers[] = {
      "alexnet",  "vgg11",    "vgg13",    "vgg16",    "vgg19",
      "vit_b_16", "vit_b_32", "vit_l_16", "vit_l_32", "vit_h_14",
      "convnext_tiny", "convnext_small", "convnext_base", "convnext_large"};
  for (const char *Name : WithoutBuffers)
    if (Builder == Name)
      return Buffers::No;
  return Buffers::Yes;
}

/// model.cuda(rank), model.to(device), ...: the same module.
static bool returnsItsModule(StringRef Method) {
  return Method == "cuda" || Method == "to" || Method == "cpu" ||
         Method == "train" || Method == "float" || Method == "half" ||
         Method == "double" || Method == "bfloat16" ||
         Method == "requires_grad_";
}

/// timm models whose buffers were counted (scripts/timm-buffers.py, timm
/// 1.0.31): these have none; the rest measured have batch norm's running
/// statistics or index buffers (Swin, BEiT, EVA-02, LeViT, MaxViT).
static std::optional<Buffers> timmBuffers(StringRef Model) {
  static const char *const WithoutBuffers[] = {
      "convnext_tiny", "convnext_atto", "convnextv2_atto",
      "vit_tiny_patch16_224", "vit_small_patch16_224", "vit_base_patch16_224",
      "deit_tiny_patch16_224", "deit3_small_patch16_224", "mixer_b16_224",
      "caformer_s18", "poolformer_s12", "edgenext_xx_small", "nfnet_l0",
      "cait_xxs24_224", "twins_pcpvt_small", "pit_ti_224"};
  static const char *const WithBuffers[] = {
      "resnet18", "resnet50", "efficientnet_b0", "mobilenetv3_large_100",
      "regnety_002", "densenet121", "swin_tiny_patch4_window7_224",
      "beit_base_patch16_224", "eva02_tiny_patch14_224", "levit_128s",
      "maxvit_tiny_tf_224", "repvgg_a2", "ghostnet_100", "mobilevit_xs",
      "xcit_nano_12_p16_224", "fastvit_t8", "efficientvit_b0",
      "inception_v3"};
  for (const char *Name : WithoutBuffers)
    if (Model == Name)
      return Buffers::No;
  for (const char *Name : WithBuffers)
    if (Model == Name)
      return Buffers::Yes;
  return std::nullopt;
}

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
      if (type(Callee) == "attribute")
        AgainstParameters = DerivesFromParameters(field(Callee, "object"));
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
  if (StringRef(Name).ends_with("convert_sync_batchnorm"))
    return Buffers::Yes;
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
    return torchNNBuffers(Qualified, Off, On);
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
    auto Class = ClassAttributes.find(ts_node_start_byte(S.Class));
    if (Class == ClassAttributes.end())
      return nullptr;
    auto It = Class->second.find(Key);
    return It == Class->second.end() ? nullptr : &It->second;
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

std::vector<TSNode> Frontend::assignedTo(TSNode N, const Scope &S) const {
  std::vector<TSNode> Found;
  std::string Key = bindingKey(N, S);
  if (Key.empty())
    return Found;
  auto Scan = [&](const std::vector<TSNode> &Bindings, const Scope &In) {
    for (TSNode A : Bindings) {
      if (type(A) != "assignment")
        continue;
      forEachTarget(field(A, "left"), [&](TSNode Target) {
        if (bindingKey(Target, In) == Key)
          Found.push_back(field(A, "right"));
      });
    }
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
  return Found;
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
  std::string Name = qualifiedName(Callee);
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
  return std::nullopt;
}

std::optional<Frontend::ModuleInfo>
Frontend::moduleNamed(TSNode N, const Scope &S, unsigned Depth) const {
  if (S.Owner && S.Owner != this)
    return S.Owner->moduleNamed(N, S, Depth);
  std::string Key = bindingKey(N, S);
  if (Key.empty() || Depth > 8)
    return std::nullopt;
  std::optional<ModuleInfo> Result;
  for (TSNode Right : assignedTo(N, S)) {
    if (const WrapperRule *Rule = constructedWrapper(Right)) {
      // DDP(module): the wrapped module's parameters.
      TSNode Module = namedChild(field(Right, "arguments"),
                                 Rule->ModuleConstructorArgument.value_or(0));
      if (std::optional<ModuleInfo> Inner =
              type(Module) == "call"
                  ? std::optional<ModuleInfo>()
                  : moduleNamed(Module, S, Depth + 1))
        return Inner;
      if (std::optional<ParameterSaves> Made =
              constructedModule(Module, S, Depth + 1))
        return ModuleInfo{Key, *Made};
      continue;
    }
    if (std::optional<ParameterSaves> Made =
            constructedModule(Right, S, Depth + 1))
      Result = ModuleInfo{Key, *Made};
  }
  return Result;
}

std::optional<Frontend::OptimizerInfo>
Frontend::optimizerNamed(TSNode N, const Scope &S) const {
  if (S.Owner && S.Owner != this)
    return S.Owner->optimizerNamed(N, S);
  for (TSNode Right : assignedTo(N, S)) {
    if (type(Right) != "call")
      continue;
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
    // model.parameters(), model.module.parameters().
    TSNode Of = field(Params, "function");
    if (type(Params) != "call" || type(Of) != "attribute" ||
        text(field(Of, "attribute")) != "parameters")
      continue;
    TSNode Module = field(Of, "object");
    if (type(Module) == "attribute" &&
        text(field(Module, "attribute")) == "module")
      Module = field(Module, "object");
    std::optional<ModuleInfo> Stepped = moduleNamed(Module, S);
    if (!Stepped)
      continue;
    OptimizerInfo Info;
    Info.ParametersOf = Stepped->Key;
    Info.Class = qualifiedName(field(Right, "function"));
    // Measured (docs/ground-truth.md): every torch.optim step bumps the
    // version counters of the parameters it updates, except fused ones.
    Info.Bumps = !Fused;
    Info.Assumed = !StringRef(Info.Class).starts_with("torch.optim.");
    return Info;
  }
  return std::nullopt;
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
  // Every binding of the name in S is an assignment of a grad-free value;
  // a parameter, a loop variable or a with-target is not known.
  for (TSNode Parameter : parameterNames(S.Node))
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
        Free = isGradFree(field(B, "right"), S, Depth + 1);
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
  std::string Name = qualifiedName(Callee);
  if (StringRef(Name).starts_with("self.") && !isNull(S.Class))
    Name = (text(field(S.Class, "name")) + StringRef(Name).drop_front(4)).str();
  if (Scope *Found = Functions.lookup(Name))
    return Found;
  if (Scope *Found = Functions.lookup(S.Name + "." + Name))
    return Found;
  if (const Partial *P = calledPartial(Callee, S))
    return P->Function;
  auto [File, Rest] = imported(Name);
  return File ? File->Functions.lookup(Rest) : nullptr;
}


template <typename Fn>
void Frontend::forEachArgument(TSNode Call,
                               const std::vector<TSNode> &Parameters,
                               unsigned Skip, Fn Each, unsigned Leading) const {
  unsigned Index = Skip;
  forEachNamedChild(field(Call, "arguments"), [&](TSNode Argument) {
    if (type(Argument) != "keyword_argument") {
      if (Leading > 0) {
        --Leading;
        return;
      }
      if (Index < Parameters.size())
        Each(Argument, Index);
      ++Index;
      return;
    }
    for (unsigned I = 0; I < Parameters.size(); ++I)
      if (!isNull(Parameters[I]) &&
          text(Parameters[I]) == text(field(Argument, "name")))
        Each(field(Argument, "value"), I);
  });
}

/// The number of positional arguments of a call.
static unsigned positionalArguments(TSNode Call) {
  unsigned Count = 0;
  forEachNamedChild(field(Call, "arguments"), [&](TSNode Argument) {
    Count += type(Argument) != "keyword_argument";
  });
  return Count;
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

template <typename Fn>
void Frontend::forEachCallArgument(TSNode Call, const Scope &Caller,
                                   const Scope &Called, Fn Each) const {
  std::vector<TSNode> Parameters = parameterNames(Called.Node);
  TSNode Callee = field(Call, "function");
  // A method called through an object: its first parameter is self.
  auto Skip = [&](TSNode FunctionExpression) -> unsigned {
    return !isNull(Called.Class) && type(FunctionExpression) == "attribute";
  };
  unsigned Bound = 0;
  if (const Partial *P = calledPartial(Callee, Caller)) {
    TSNode Function = namedChild(field(P->Call, "arguments"), 0);
    forEachArgument(
        P->Call, Parameters, Skip(Function),
        [&](TSNode Value, unsigned I) { Each(Value, I, *P->Where); },
        /*Leading=*/1);
    Bound = Skip(Function) + positionalArguments(P->Call) - 1;
  } else {
    Bound = Skip(Callee);
  }
  forEachArgument(Call, Parameters, Bound,
                  [&](TSNode Value, unsigned I) { Each(Value, I, Caller); });
}

const std::vector<Frontend::HelperForward> &
Frontend::helperForwards(const Scope &Helper) {
  if (Helper.Owner != this)
    return Helper.Owner->helperForwards(Helper);
  auto [It, Inserted] = HelperForwards.try_emplace(&Helper);
  if (!Inserted)
    return It->second;
  std::vector<TSNode> Parameters = parameterNames(Helper.Node);
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
        std::vector<TSNode> Parameters = parameterNames(Called.Node);
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

/// Lowers one scope to an EventGraph.
class Lowering {
public:
  Lowering(Frontend &F, Scope &S) : F(F), S(S) {}

  void run();

  EventGraph Graph;
  std::vector<Position> Sites;
  /// The statement of a block (or of the module) a site is in.
  struct Place {
    TSNode Statement;
    TSNode Block;
  };
  std::vector<Place> SitePlaces;
  Place Here;
  /// The name each object was bound by, and its binding, per object.
  std::vector<std::string> ObjectNames;
  std::vector<Binding> ObjectBindings;
  /// The optimizer steps, by site: the optimizer as written and what it
  /// steps.
  std::map<SiteId, std::pair<std::string, Frontend::OptimizerInfo>> Steps;
  /// In-place writes on values, by site.
  struct ValueWrite {
    enum Form { Method, Augmented, Subscript, Function, Module };
    Form WriteForm;
    /// The call, augmented assignment or assignment that writes.
    TSNode Node;
    /// The tensor it writes, as the code names it.
    TSNode Tensor;
    std::string Operation;
  };
  std::map<SiteId, ValueWrite> ValueWrites;
  /// The operations that may save a value, by site.
  std::map<SiteId, TSNode> SavingOps;
  /// The backwards a module's forward appends at its returns: the caller's
  /// through the value returned.
  llvm::DenseSet<SiteId> ResultBackwards;
  /// Why no out-of-place spelling keeps the meaning of Write, or empty with
  /// the edits in Fix.
  std::string outOfPlaceFix(const ValueWrite &Write, std::vector<Edit> &Fix);
  /// Whether Id, a use of a tensor's name, cannot keep a handle to its
  /// storage: an operand of an operation that makes a new tensor, a
  /// module's input, or a query of its shape.
  bool usedWithoutHandle(TSNode Id);
  /// Adds the finding of a write that clobbers what operations saved.
  void reportValueWrite(const AnalysisResult &R, const Clobber &C,
                        const ValueWrite &Write, CheckResult &Result);

private:
  using Values = llvm::SmallVector<ValueId, 4>;
  struct Loop {
    unsigned Head;
    unsigned Exit;
  };

  ValueId valueOf(StringRef Key);
  ObjectId objectFor(StringRef Key, const Binding &Bound);
  /// Appends to block B a forward of call N on the object bound to Key;
  /// returns its output.
  /// With Module, the forward saves its parameters too.
  ValueId forward(unsigned B, TSNode N, StringRef Key, const Binding &Bound,
                  const Values &Inputs,
                  const Frontend::ModuleInfo *Module = nullptr);
  SiteId site(TSNode N) {
    Sites.push_back(positionOf(N));
    SitePlaces.push_back(Here);
    return Sites.size() - 1;
  }
  unsigned startBlock() { return Current = Graph.addBlock(); }
  void edgeTo(unsigned B) { Graph.addEdge(Current, B); }

  void statements(TSNode Block);
  void statement(TSNode N);
  /// Binds the targets of Left to From; with Right (the assigned
  /// expression), a name gets Right's storage.
  void assign(TSNode Left, const Values &From, bool Accumulate,
              TSNode Right = TSNode{});
  Values expression(TSNode N);
  Values call(TSNode N);
  /// Lowers each named child and joins what their histories come from.
  Values children(TSNode N);
  /// Whether a `with` item or decorator turns grad mode off (true), on
  /// (false), or leaves it (nullopt).
  std::optional<bool> gradModeOf(TSNode Expression);
  static bool isTrue(TSNode N) { return !isNull(N) && type(N) == "true"; }

  /// The forward of a module saves its parameters (as its kind does).
  void saveParameters(Event &Forward, const Frontend::ModuleInfo &Module,
                      const Values &Inputs);
  /// Steps are followed only in scopes that step and backpropagate (the
  /// text says so): elsewhere plain modules' forwards are not events.
  bool TracksSteps = false;
  /// In-place writes on values are followed in scopes that backpropagate
  /// and in modules' forwards (IsModuleForward), whose callers backpropagate
  /// through the value they return.
  bool TracksValues = false;
  bool IsModuleForward = false;
  /// Whether the scope holds a write that may be in place.
  bool writesInPlace();
  /// Where the tensor N's storage comes from: the node whose tensor N is a
  /// view, handle or in-place result of (x.view(...), x[i], x.T, x.mul_(2),
  /// F.relu(x, inplace=True)), else null.
  TSNode sharedFrom(TSNode N);
  /// The value whose storage the tensor N shares: a name, the result of an
  /// operation, or a view of one; nullopt where unknown.
  std::optional<ValueId> storageSource(TSNode N);
  TensorSetId newStorage() {
    return Graph.addTensorSet({TensorSetInfo::Kind::Tensors, ""});
  }
  /// Lowers an operation that saves tensors for backward (SavedOperands.def)
  /// on Operands as an Op event; Others are lowered for their history.
  Values savingOp(TSNode N, const SavedOp &Op, llvm::ArrayRef<TSNode> Operands,
                  llvm::ArrayRef<TSNode> Others);
  /// The table's entry for a call or binary operator that saves a tensor,
  /// with its operands.
  const SavedOp *savingOpOf(TSNode N, llvm::SmallVectorImpl<TSNode> &Operands,
                            llvm::SmallVectorImpl<TSNode> &Others);
  /// Appends a write through the storage of Tensor.
  void valueWrite(ValueWrite::Form Form, TSNode Node, TSNode Tensor,
                  std::string Operation);
  /// An in-place operation N on Written whose out-of-place form Base saves
  /// its result (relu_, sigmoid_, exp_): it saves the written tensor.
  std::optional<ValueId> savesItsResult(TSNode N, TSNode Written,
                                        StringRef Base, SavedOpForm Form);
  /// Whether the module Callee names saves its output for backward (an
  /// activation that saves its result, or a Sequential ending in one):
  /// always (true), if an input requires grad (false), or not (nullopt).
  std::optional<bool> savesItsOutput(TSNode Callee, unsigned Depth = 0);
  /// The forward N of the module Callee saves its output as
  /// savesItsOutput says.
  void saveOutput(Event &Forward, TSNode N, TSNode Callee,
                  const Values &Inputs);
  llvm::StringMap<std::optional<bool>> OutputSaves;
  /// The torch.nn class (torch.nn.ReLU) of the module Callee names when it
  /// was built with inplace=True: its forward writes its input. Else empty.
  std::string inPlaceModule(TSNode Callee);
  /// The values of the operations and forwards whose tensors the lowering
  /// follows, by node: where a temporary's storage is.
  llvm::DenseMap<const void *, ValueId> OpResults;
  /// The parameter set of the module Key names, made at its first use.
  TensorSetId parametersOf(StringRef Key) {
    auto [It, Inserted] = ParameterSets.try_emplace(Key, 0);
    if (Inserted)
      It->second = Graph.addTensorSet(
          {TensorSetInfo::Kind::Parameters, (Key + "'s parameters").str()});
    return It->second;
  }
  llvm::StringMap<TensorSetId> ParameterSets;
  /// The plain module a name or self attribute is bound to, asked once per
  /// key (each asking scans the scope's assignments).
  std::optional<Frontend::ModuleInfo> moduleNamed(TSNode N, StringRef Key) {
    auto [It, Inserted] = Modules.try_emplace(Key);
    if (Inserted) {
      // A self attribute is the class's, whichever method asks: asked once
      // per class (measured: each method of torch's DDP class scanning the
      // class again was a tenth of checking distributed.py).
      if (Key.starts_with("self.") && !isNull(S.Class)) {
        auto [Shared, New] = F.SelfModules.try_emplace(
            {ts_node_start_byte(S.Class), Key.str()});
        if (New)
          Shared->second = F.moduleNamed(N, S);
        It->second = Shared->second;
      } else {
        It->second = F.moduleNamed(N, S);
      }
    }
    return It->second;
  }
  llvm::StringMap<std::optional<Frontend::ModuleInfo>> Modules;

  Frontend &F;
  Scope &S;
  unsigned Current = 0;
  unsigned Exit = 0;
  bool GradEnabled = true;
  /// The objects whose no_sync() block the lowering is in.
  llvm::StringSet<> NoSyncObjects;
  std::vector<Loop> Loops;
  llvm::StringMap<ValueId> Names;
  llvm::StringMap<ObjectId> Objects;
};

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
                          const Frontend::ModuleInfo *Module) {
  ValueId Output = Graph.addValue();
  ObjectId Object = objectFor(Key, Bound);
  Event Forward =
      Event::forward(site(N), Object, GradEnabled, Output, Inputs);
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

void Lowering::run() {
  StringRef Text = F.text(S.Node);
  TracksSteps = Text.contains(".step(") && Text.contains("backward");
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
    for (TSNode Name : parameterNames(S.Node))
      if (type(Name) == "identifier") {
        OriginId Origin;
        ValueId V = Graph.addInputValue(Origin);
        Names[F.text(Name)] = V;
        if (TracksValues && F.text(Name) != "self")
          Graph.setInputStorage(V, newStorage());
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
      Graph.append(Current, Event::backward(Site, Result, /*RetainGraph=*/false));
      ResultBackwards.insert(Site);
    }
    edgeTo(Exit);
    startBlock(); // Unreachable.
    return;
  }
  if (Kind == "with_statement") {
    bool Saved = GradEnabled;
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

  // A forward on a DDP object: model(x), model.forward(x), self.model(x).
  TSNode Object = Callee;
  if (type(Callee) == "attribute" &&
      F.text(field(Callee, "attribute")) == "forward")
    Object = field(Callee, "object");
  Binding Info;
  std::string Key = F.bindingKey(Object, S);
  if (!Key.empty() && F.isDDPValue(Object, S, &Info)) {
    Values Inputs = children(Arguments);
    std::optional<Frontend::ModuleInfo> Module;
    if (TracksSteps)
      Module = moduleNamed(Object, Key);
    ValueId Output =
        forward(Current, N, Key, Info, Inputs, Module ? &*Module : nullptr);
    if (TracksValues)
      OpResults[N.id] = Output;
    return {Output};
  }
  // A plain module's forward, where steps are followed: it saves its
  // parameters, which a step may write before the backward through it.
  // Where values are followed, its output is what may require grad.
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
      if (!InPlaceClass.empty()) {
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
    TSNode Stepped = field(Callee, "object");
    std::optional<Frontend::OptimizerInfo> Optimizer =
        F.optimizerNamed(Stepped, S);
    if (!Optimizer) {
      Stepped = namedChild(Arguments, 0);
      Optimizer = F.optimizerNamed(Stepped, S);
    }
    if (Optimizer && Optimizer->Bumps) {
      Values All = children(Arguments);
      SiteId Site = site(N);
      Steps[Site] = {F.text(Stepped).str(), *Optimizer};
      Graph.append(Current,
                   Event::write(Site, WriteKind::Step,
                                {parametersOf(Optimizer->ParametersOf)}));
      return All;
    }
  }

  std::string Name = F.qualifiedName(Callee);
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
  if (Scope *Helper = F.calledFunction(Callee, S); Helper && Helper != &S) {
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
        isInPlaceMethod(F.text(field(Callee, "attribute"))) &&
        !F.isDDPValue(field(Callee, "object"), S, nullptr)) {
      Written = field(Callee, "object");
      Form = ValueWrite::Method;
      Operation = F.text(field(Callee, "attribute")).str();
      Base = F.text(field(Callee, "attribute")).drop_back();
      BaseForm = SavedOpForm::Method;
    } else if (StringRef(Name).starts_with("torch.") &&
               (isInPlaceMethod(StringRef(Name).rsplit('.').second) ||
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

bool Lowering::writesInPlace() {
  // Storage is followed only where something may write a tensor in place:
  // measured, following it in every scope that backpropagates made the
  // check of torch's distributed.py 3.7 times slower (93 ms against 25 ms).
  // The text says first: a syntactic scan of every scope cost a sixth of
  // the instructions of checking bench/python's generated script.
  StringRef Text = F.text(S.Node);
  bool InPlaceModules = !F.inPlaceModules().empty();
  auto SubscriptAssigned = [&] {
    for (size_t At = Text.find(']'); At != StringRef::npos;
         At = Text.find(']', At + 1)) {
      StringRef After = Text.drop_front(At + 1).ltrim(" \t");
      if (After.starts_with("=") && !After.starts_with("=="))
        return true;
    }
    return false;
  };
  if (!InPlaceModules && !Text.contains("_(") && !Text.contains("inplace") &&
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
      Found = isInPlaceMethod(Name) ||
              F.text(field(N, "arguments")).contains("inplace") ||
              (InPlaceModules && !inPlaceModule(Callee).empty());
    }
  });
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
    bool InPlace = isInPlaceMethod(Function);
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
    if (isViewMethod(Method) || isInPlaceMethod(Method))
      return field(Callee, "object");
  }
  if (!inPlaceModule(Callee).empty())
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
  std::optional<ValueId> Through = storageSource(Tensor);
  if (!Through)
    return;
  SiteId Site = site(Form == ValueWrite::Method
                         ? field(field(Node, "function"), "attribute")
                         : Node);
  Graph.append(Current, Event::write(Site, WriteKind::InPlace, {}, {*Through}));
  ValueWrites[Site] = {Form, Node, Tensor, std::move(Operation)};
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

/// torch.nn activations whose forward saves its output (their functions'
/// "r:" rules in SavedOperands.def).
static bool savesOutput(StringRef Class) {
  return llvm::is_contained({"torch.nn.ReLU", "torch.nn.Sigmoid",
                             "torch.nn.Tanh", "torch.nn.Softmax",
                             "torch.nn.LogSoftmax"},
                            Class);
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
  for (TSNode Parameter : parameterNames(S.Node))
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
           isInPlaceMethod(F.text(field(Callee, "attribute")));
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
         isInPlaceMethod(StringRef(Name).rsplit('.').second) &&
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

void Lowering::reportValueWrite(const AnalysisResult &R, const Clobber &C,
                                const ValueWrite &Write, CheckResult &Result) {
  Lowering &L = *this;
  // The earliest saving operation in the file, with its first failing
  // backward.
  std::optional<std::pair<Position, SiteId>> First;
  std::optional<SiteId> Backward;
  for (OriginId Saver : C.Savers) {
    SiteId Site = L.Graph.eventOf(Saver).Site;
    if (!L.SavingOps.count(Site))
      continue;
    Position At = L.Sites[Site];
    if (First && !(At < First->first))
      continue;
    if (std::optional<SiteId> B = R.firstBackward(Saver, C.Writer)) {
      First = {At, Site};
      Backward = B;
    }
  }
  if (!First)
    return;
  ValueWriteFinding Found;
  Found.Operation = Write.Operation;
  Found.Tensor = F.text(Write.Tensor).str();
  // A saver that spans lines or runs long is named by its function.
  StringRef Saver = F.text(L.SavingOps.at(First->second));
  if (Saver.contains('\n') || Saver.size() > 60)
    Found.Saver = Saver.contains('(')
                      ? (Saver.take_until([](char C) { return C == '('; }) +
                         "(...)")
                            .str()
                      : "an operation";
  else
    Found.Saver = Saver.str();
  Found.Write = L.Sites[L.Graph.eventOf(C.Writer).Site];
  Found.Saved = First->first;
  Found.Backward = L.Sites[*Backward];
  Found.ThroughResult = L.ResultBackwards.count(*Backward);
  Found.FixWithheld = L.outOfPlaceFix(Write, Found.Fix);
  Result.ValueWrites.push_back(std::move(Found));
}

void Frontend::analyse(Scope &S, CheckResult &Result) {
  Lowering L(*this, S);
  L.run();
  if (L.ObjectNames.empty() && L.ValueWrites.empty())
    return;
  AnalysisOptions Analysis;
  Analysis.ListHazards = false;
  AnalysisResult R = analyzeHazards(L.Graph, Analysis);
  // The first backward through Saver after Writer; the backwards a module's
  // forward appends at its returns count for value writes only.
  auto FirstBackward = [&](OriginId Saver, OriginId Writer,
                           bool ResultsToo) -> std::optional<SiteId> {
    std::optional<SiteId> B = R.firstBackward(Saver, Writer);
    if (B && !ResultsToo && L.ResultBackwards.count(*B))
      return std::nullopt;
    return B;
  };
  for (const Clobber &C : R.Clobbers) {
    if (L.Graph.isWriteOrigin(C.Writer)) {
      const Event &Write = L.Graph.eventOf(C.Writer);
      if (auto Value = L.ValueWrites.find(Write.Site);
          Value != L.ValueWrites.end()) {
        L.reportValueWrite(R, C, Value->second, Result);
        continue;
      }
      auto Step = L.Steps.find(Write.Site);
      if (Step == L.Steps.end())
        continue;
      std::optional<std::pair<Position, SiteId>> First;
      for (OriginId Saver : C.Savers) {
        Position At = L.Sites[L.Graph.forwardOf(Saver).Site];
        if (First && !(At < First->first))
          continue;
        if (std::optional<SiteId> B = FirstBackward(Saver, C.Writer, false))
          First = {At, *B};
      }
      if (!First)
        continue;
      StepFinding Found;
      Found.Optimizer = Step->second.first;
      Found.OptimizerClass = Step->second.second.Class;
      Found.Module = Step->second.second.ParametersOf;
      Found.Assumed = Step->second.second.Assumed;
      Found.Step = L.Sites[Write.Site];
      Found.Forward = First->first;
      Found.Backward = L.Sites[First->second];
      Result.Steps.push_back(Found);
      continue;
    }
    if (!L.Graph.isForwardOrigin(C.Writer))
      continue;
    const Event &Second = L.Graph.forwardOf(C.Writer);
    // The earliest saver in the file, with its first failing backward.
    std::optional<std::pair<Position, OriginId>> First;
    std::optional<SiteId> Backward;
    for (OriginId Saver : C.Savers) {
      Position At = L.Sites[L.Graph.forwardOf(Saver).Site];
      if (First && !(At < First->first))
        continue;
      if (std::optional<SiteId> B = FirstBackward(Saver, C.Writer, false)) {
        First = {At, Saver};
        Backward = B;
      }
    }
    if (!First)
      continue;
    Finding Found;
    Found.Object = L.ObjectNames[Second.Object];
    Found.Function = S.Name;
    Found.Second = L.Sites[Second.Site];
    Found.First = First->first;
    Found.Backward = L.Sites[*Backward];
    const Binding &Bound = L.ObjectBindings[Second.Object];
    Found.Construction = Bound.Constructed;
    Found.ConstructionFile = Bound.File;
    Found.BuffersAssumption = Bound.BuffersAssumption;
    Found.BroadcastKeyword = Bound.BroadcastKeyword;
    Found.BroadcastFix = Bound.BroadcastFix;
    Found.SameForwardInALoop = First->second == C.Writer;
    if (Found.SameForwardInALoop)
      Found.NoSyncWithheld = "the two forwards are one call in two "
                             "iterations of a loop";
    else
      Found.NoSyncWithheld = noSyncFix(
          L.SitePlaces[L.Graph.forwardOf(First->second).Site].Statement,
          L.SitePlaces[Second.Site].Statement,
          L.SitePlaces[L.Graph.forwardOf(First->second).Site].Block,
          L.SitePlaces[Second.Site].Block, Second.GradEnabled, Found.Object,
          Bound, Found.NoSyncFix);
    Result.Findings.push_back(Found);
  }
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
  uint32_t Start = ts_node_start_byte(Statement);
  size_t LineStart = Source.rfind('\n', Start);
  LineStart = LineStart == StringRef::npos ? 0 : LineStart + 1;
  StringRef Indent = Source.slice(LineStart, Start);
  StringRef After = Source.drop_front(ts_node_end_byte(Statement));
  After = After.take_until([](char C) { return C == '\n'; }).ltrim(" \t");
  if (!Indent.ltrim(" \t").empty() ||
      !(After.empty() || After.starts_with("#")))
    return "the first forward's statement shares its line with another";
  Fix = {Start, 0,
         ("with " + Object + ".no_sync():\n" + Indent +
          (Indent.contains('\t') ? "\t" : "    "))
             .str()};
  return "";
}

void collectErrors(TSNode N, std::vector<Position> &Errors) {
  if (!ts_node_has_error(N))
    return;
  if (ts_node_is_error(N) || ts_node_is_missing(N)) {
    Errors.push_back(positionOf(N));
    return;
  }
  for (uint32_t I = 0, E = ts_node_child_count(N); I < E; ++I)
    collectErrors(ts_node_child(N, I), Errors);
}

void Frontend::collectFile(TSNode Root) {
  auto Module = std::make_unique<Scope>();
  Module->Owner = this;
  Module->Node = Root;
  Module->Name = "<module>";
  ModuleScope = Module.get();
  Scopes.push_back(std::move(Module));
  collect(Root, *ModuleScope, TSNode{}, "");
}

CheckResult Frontend::findings(TSNode Root) {
  CheckResult Result;
  collectErrors(Root, Result.SyntaxErrors);
  for (auto &S : Scopes)
    analyse(*S, Result);
  llvm::sort(Result.Findings, [](const Finding &A, const Finding &B) {
    return A.Second < B.Second;
  });
  llvm::sort(Result.Steps, [](const StepFinding &A, const StepFinding &B) {
    return A.Step < B.Step;
  });
  llvm::sort(Result.ValueWrites,
             [](const ValueWriteFinding &A, const ValueWriteFinding &B) {
               return A.Write < B.Write;
             });
  Result.Findings.erase(
      std::unique(Result.Findings.begin(), Result.Findings.end(),
                  [](const Finding &A, const Finding &B) {
                    return A.Second == B.Second;
                  }),
      Result.Findings.end());
  return Result;
}

} // namespace

std::vector<CheckResult> checkSources(llvm::ArrayRef<SourceFile> Sources,
                                      const RuleSet &Rules) {
  std::unique_ptr<TSParser, void (*)(TSParser *)> Parser(ts_parser_new(),
                                                         ts_parser_delete);
  ts_parser_set_language(Parser.get(), tree_sitter_python());
  using Tree = std::unique_ptr<TSTree, void (*)(TSTree *)>;
  std::vector<Tree> Trees;
  std::vector<std::unique_ptr<Frontend>> Frontends;
  Run Files;
  for (const SourceFile &File : Sources) {
    Trees.emplace_back(ts_parser_parse_string(Parser.get(), nullptr,
                                              File.Source.data(),
                                              File.Source.size()),
                       ts_tree_delete);
    Files.Sources[Trees.back().get()] = File.Source;
    Frontends.push_back(std::make_unique<Frontend>(
        File.Path, File.Source, Trees.back().get(), Rules, File.Options,
        Files));
    // The module path, and every dotted name the file could be imported as.
    StringRef Module = File.Path;
    Module.consume_back(".py");
    if (llvm::sys::path::filename(Module) == "__init__")
      Module = llvm::sys::path::parent_path(Module);
    Files.ByPath[Module] = Frontends.back().get();
    std::string Name;
    for (auto Part = llvm::sys::path::rbegin(Module),
              End = llvm::sys::path::rend(Module);
         Part != End && *Part != "/"; ++Part) {
      Name = Name.empty() ? Part->str() : (*Part + "." + Name).str();
      Files.ByName[Name].push_back(Frontends.back().get());
    }
  }
  for (size_t I = 0; I < Sources.size(); ++I)
    Frontends[I]->collectFile(ts_tree_root_node(Trees[I].get()));
  for (auto &F : Frontends)
    F->collectPartials();
  // Each round binds at least one more name (a parameter of a helper of
  // another file too); the files have finitely many.
  for (bool Bound = true; Bound;) {
    Bound = false;
    for (auto &F : Frontends)
      Bound |= F->bindDDPNames();
  }
  std::vector<CheckResult> Results;
  for (size_t I = 0; I < Sources.size(); ++I)
    Results.push_back(
        Frontends[I]->findings(ts_tree_root_node(Trees[I].get())));
  return Results;
}

CheckResult checkSource(StringRef Source, const RuleSet &Rules,
                        const CheckOptions &Options) {
  return std::move(
      checkSources({SourceFile{"<source>.py", Source, Options}}, Rules)
          .front());
}

} // namespace python
} // namespace ddpguard
