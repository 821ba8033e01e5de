//===- Frontend.h - One Python file's names and scopes --------------------===//
//
// The first pass over a file's tree binds names: imports (so that `DDP`,
// `nn.parallel.DistributedDataParallel` and the full name all resolve to the
// rule's type), the DDP constructions, the factory functions that return
// one, and the parameters that receive one from a call in the run.
// Bindings are per scope and flow-insensitive: a name that holds a DDP
// object anywhere in its scope is one throughout.
//
//===----------------------------------------------------------------------===//

#ifndef DDPGUARD_PYTHONFRONTEND_FRONTEND_H
#define DDPGUARD_PYTHONFRONTEND_FRONTEND_H

#include "PythonFrontend.h"
#include "Syntax.h"
#include "Model/HazardAnalysis.h"
#include "Torch/InPlace.h"
#include "Torch/Modules.h"
#include "Torch/Ops.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include <map>
#include <memory>
#include <optional>

namespace ddpguard {
namespace python {
namespace detail {

using namespace model;
using namespace torch;
using llvm::StringRef;

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
  /// Why no edit turns the broadcast off (a library builds the DDP object
  /// and the file offers no place to say so); then BroadcastFix is empty.
  std::string BroadcastWithheld;
  /// The construction sets a reducer option (find_unused_parameters,
  /// static_graph) other than to False: the keyword, else empty.
  std::string ReducerOption;
};


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
  /// The function's or lambda's parameter names (null for a parameter
  /// without one), found once: measured, finding them per call was 3% of
  /// checking timm's folder.
  std::vector<TSNode> Parameters;
  /// The scope's own assignments, returns and calls (not those of nested
  /// functions), in order: what binds names.
  std::vector<TSNode> Bindings;
  /// Names bound to a DDP object in this scope, with the construction's
  /// object settings.
  llvm::StringMap<Binding> DDPNames;
};

/// A module key as the code names it: "net.encoder" of "net@1234:120.encoder".
inline std::string displayName(StringRef Key) {
  std::string Name;
  while (!Key.empty()) {
    auto [Before, After] = Key.split('@');
    Name += Before;
    Key = After.drop_until([](char C) { return C == '.'; });
  }
  return Name;
}

/// An expression and the scope it is read in.
struct Value {
  TSNode Node;
  const Scope *In = nullptr;
  /// The element of Node's value a tuple target takes (`g, d = build()`).
  std::optional<unsigned> Element;
  /// For what a function returns: the call it was returned to, whose
  /// arguments are its parameters while Node is read.
  TSNode Call{};
  const Scope *Caller = nullptr;
};

/// What a function's body (and the functions it calls) may do, from its
/// text: step an optimizer, backpropagate, call anything at all.
struct FunctionEffects {
  bool Steps = false;
  bool Backpropagates = false;
  bool Any = false;
};

struct Run {
  /// The source of each file's tree, for the text of nodes of other files.
  std::map<const TSTree *, StringRef> Sources;
  /// Each file's frontend by its module path: the absolute path without
  /// ".py" ("/src/pkg/models"; a package's __init__.py is "/src/pkg").
  llvm::StringMap<Frontend *> ByPath;
  /// By every dotted name the file could be imported as ("models",
  /// "pkg.models", ...): the files that could be it.
  llvm::StringMap<std::vector<Frontend *>> ByName;
  /// The calls of each function of the run, with the scope of each call:
  /// what binds its parameters. Built at first use, once the names are.
  std::map<const Scope *, std::vector<std::pair<TSNode, const Scope *>>>
      CallSites;
  bool CallSitesBuilt = false;
  /// The names of the run's methods, and the method each call on an
  /// instance calls (Frontend::calledMethodOfInstance), found once.
  llvm::StringSet<> MethodNames;
  std::map<const void *, Scope *> MethodCalls;
  /// Each class's family (Frontend::classFamily), by its node.
  std::map<const void *, std::vector<std::pair<TSNode, const Frontend *>>>
      FamilyOf;
  /// Each class's subclasses in the run, by its node, from every class's
  /// bases found once (per class it was a scan of the run's classes).
  std::map<const void *, std::vector<std::pair<TSNode, const Frontend *>>>
      SubclassesOf;
  bool SubclassesBuilt = false;
  /// How many calls that keep norm layers from saving their running
  /// statistics (torch.compile, convert_sync_batchnorm) the module being
  /// followed is inside.
  unsigned RunningStatisticsUnsaved = 0;
  /// How many constructorsOf are in progress (they recurse through values).
  unsigned InstanceLookups = 0;
  /// Each function's effects, found once (Frontend::effectsOf).
  std::map<const Scope *, FunctionEffects> EffectsOf;
  /// The calls whose returned values are being read, innermost last: a
  /// parameter of the called function is then that call's argument only.
  std::vector<const Value *> ReadingReturnOf;
  /// The module keys of the receivers of the methods being read, innermost
  /// last: self.X in such a method is the receiver's part X.
  std::vector<std::string> ReceiverKeys;
};

/// Reads a returned value with its call's arguments as the function's
/// parameters, while it lives.
class ReadingReturn {
public:
  ReadingReturn(Run &Files, const Value &V) : Files(Files), Pushed(V.Caller) {
    if (Pushed)
      Files.ReadingReturnOf.push_back(&V);
  }
  ~ReadingReturn() {
    if (Pushed)
      Files.ReadingReturnOf.pop_back();
  }

private:
  Run &Files;
  bool Pushed;
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
  /// Where absolute imports resolve after the file's folder.
  std::vector<std::string> SourceRoots;

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
  /// The file of the run the name's module is, without following what a
  /// package's __init__.py imports.
  std::pair<Frontend *, std::string> importedFile(StringRef Qualified) const;

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
  /// `acc.prepare(a, b, ...)` where acc holds an instance of a preparer's
  /// class (accelerate's Accelerator): the rule, with the instance's
  /// construction in Construction.
  const PreparerRule *preparerCall(TSNode Call, const Scope &S,
                                   Value &Construction) const;
  /// Calls Each(target, object) for each target of `targets = Call` (a
  /// preparer's call) whose argument at the same place is a module.
  void forEachPrepared(TSNode Targets, TSNode Call, const Scope &S,
                       llvm::function_ref<void(TSNode, const Binding &)> Each) const;
  /// The DDP object a preparer's call returns for the module Module.
  Binding preparedObject(TSNode Call, TSNode Module, const PreparerRule &Rule,
                         const Value &Construction, const Scope &S) const;
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
  /// The qualified name of the class a call constructs: its callee's, or
  /// for a parameter of S's function (norm_layer=nn.LayerNorm, or a
  /// functools.partial of a class) its default's.
  std::string constructedClass(TSNode Call, const Scope &S) const;
  /// Whether the module the name or self attribute N holds is a torch.nn
  /// layer that saves its input for backward (Linear, Conv*, norms).
  bool savesItsInput(TSNode N, const Scope &S) const;
  /// Whether Callee, whose qualified name is Name, is a class imported from
  /// a package outside the run that may be a module.
  bool isPackageClass(TSNode Callee, StringRef Name) const;
  /// An optimizer a name is bound to: Adam(model.parameters(), ...).
  struct OptimizerInfo {
    /// The keys of the modules whose parameters it steps ("net",
    /// "net.encoder": a part of net).
    std::vector<std::string> ParametersOf;
    std::string Class;
    bool Bumps = true;
    bool Assumed = false;
  };
  std::optional<OptimizerInfo> optimizerNamed(TSNode N, const Scope &S,
                                              unsigned Depth = 0) const;
  /// The optimizer a `.step(...)` call steps (opt.step(), scaler.step(opt)),
  /// fused or not (OptimizerInfo::Bumps); Stepped is set to the expression
  /// naming it.
  std::optional<OptimizerInfo> steppedOptimizer(TSNode Call, const Scope &S,
                                                TSNode &Stepped) const;
  /// The keys of the modules whose parameters an optimizer's params
  /// argument holds: X.parameters() (X may be a part of a module: net.enc),
  /// parameter groups, chain(...), list(...) + list(...), filter(f, ...),
  /// comprehensions and names bound to these. Empty when any part is not
  /// followed.
  std::vector<std::string> parameterSources(TSNode Params, const Scope &S,
                                            unsigned Depth = 0) const;
  /// model.style_params(), a method of a module class of the run returning
  /// parameters: the sets it returns, read with self as the receiver.
  std::vector<std::string> methodParameterSources(TSNode Call, const Scope &S,
                                                  unsigned Depth) const;
  /// The keys of the modules an expression names, through the names bound to
  /// it (a loop's variable: each element).
  std::vector<std::string> moduleKeys(TSNode N, const Scope &S,
                                      unsigned Depth) const;
  /// A module or a part of one: the key of the longest prefix of the
  /// attribute chain N that names a module, with the rest appended.
  std::optional<std::string> moduleOrPartKey(TSNode N, const Scope &S) const;
  /// The right sides assigned to the name or self attribute N in S (and the
  /// module's code, or the class's methods).
  std::vector<TSNode> assignedTo(TSNode N, const Scope &S) const;
  /// What the name or self attribute N may hold in S: the right sides
  /// assigned to it, and for a parameter of S's function the argument of
  /// every call of it in the run (read in the caller's scope).
  std::vector<Value> valuesOf(TSNode N, const Scope &S) const;
  /// What the methods of Class, its bases and its subclasses assign to the
  /// self attribute Key ("self.opt"), read in those methods.
  std::vector<Value> selfAttributeValues(TSNode Class, StringRef Key) const;
  /// obj.X where obj holds an instance of a class of the run: that class's
  /// self.X.
  std::vector<Value> instanceAttributeValues(TSNode N, const Scope &S) const;
  /// The __init__ of each class of the run whose instance N may hold.
  std::vector<const Scope *> constructorsOf(TSNode N, const Scope &S,
                                            unsigned Depth = 0) const;
  /// A module forward whose output a value may hold (gen_loss built from
  /// self.discriminator(fake) in process(), handed to backward()).
  struct ReachedForward {
    TSNode Call;
    const Scope *In = nullptr;
    ModuleInfo Module;
  };
  /// The module forwards the values of the parameter N of S's function hold,
  /// through its callers' arguments, names, tuple elements, what functions
  /// return and the operations on them; none through detach() or item().
  std::vector<ReachedForward> forwardsReaching(TSNode N, const Scope &S) const;
  /// The elements a `for` loop over Iterable takes, as far as they are
  /// written out; empty when not followed.
  std::vector<TSNode> iteratedElements(TSNode Iterable, const Scope &S,
                                       unsigned Depth = 0) const;
  /// Values, with each call of a function of the run (not a class's
  /// construction) replaced by what the function returns, read in it.
  std::vector<Value> throughFactories(std::vector<Value> Values,
                                      unsigned Depth = 0) const;
  const std::vector<std::pair<TSNode, const Scope *>> &
  callSitesOf(const Scope &Function) const;
  /// The class and its bases of the run, nearest first, each with the
  /// file that holds it.
  std::vector<std::pair<TSNode, const Frontend *>>
  classAndBases(TSNode Class) const;
  /// The class, its bases and the classes of the run derived from it: a
  /// method of a base reads the self attributes a subclass sets.
  std::vector<std::pair<TSNode, const Frontend *>>
  classFamily(TSNode Class) const;
  /// A module's key: its name, and where it was constructed, so that a
  /// module passed to a helper under another name is the same module
  /// ("net@<file>:120"); displayName drops the place.
  std::string moduleKey(StringRef Name, TSNode Construction) const;
  /// Whether expression N surely does not require grad in S: literals,
  /// torch's factories (torch.randn, torch.zeros_like, ...), what is
  /// computed from them only, and names bound only to such.
  bool isGradFree(TSNode N, const Scope &S, unsigned Depth = 0) const;
  /// Whether expression N surely holds a Python value, not a tensor:
  /// numbers, strings, containers (an item assignment writes no tensor),
  /// len(...), x.item(), x.shape[0], what is computed from them only, and
  /// names bound only to such.
  bool isPythonValue(TSNode N, const Scope &S, unsigned Depth = 0) const;
  /// Whether every binding of the name N in S assigns a value Holds accepts.
  template <typename Pred>
  bool boundOnlyTo(TSNode N, const Scope &S, Pred Holds) const;
  /// The key a name or self-attribute is bound by in S: "x", "self.x".
  std::string bindingKey(TSNode N, const Scope &S) const;
  const Binding *ddpBinding(StringRef Key, const Scope &S) const;
  /// The function of the file a call's callee names (self.m in a method
  /// names the class's m; a nested function or a lambda bound to a name is
  /// found from its enclosing function), or null.
  Scope *calledFunction(TSNode Callee, const Scope &S) const;
  /// calledFunction without methods called on instances of the run's
  /// classes, which need the call sites this one builds.
  Scope *calledFunctionByName(TSNode Callee, const Scope &S) const;
  Scope *calledMethodOfInstance(TSNode Callee, const Scope &S) const;
  const FunctionEffects &effectsOf(const Scope &Function) const;
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
  /// The modules of `from X import *`, spelled as Imports' values are.
  std::vector<std::string> StarImports;
  std::vector<std::unique_ptr<Scope>> Scopes;
  Scope *ModuleScope = nullptr;
  /// Per class node (by start byte): self attributes bound to DDP objects.
  std::map<uint32_t, llvm::StringMap<Binding>> ClassAttributes;
  /// Functions of the file by name (methods as Class.name), and the
  /// factories among them: those that return a DDP object.
  llvm::StringMap<Scope *> Functions;
  llvm::StringMap<Binding> Factories;
  /// The functions that assign each name under a `global` statement: the
  /// module's bindings of it too.
  llvm::StringMap<std::vector<const Scope *>> GlobalWriters;
  /// Classes of the file by name.
  llvm::StringMap<TSNode> Classes;
  /// Lowering's moduleNamed of self attributes, by class (its start byte).
  std::map<std::pair<uint32_t, std::string>, std::optional<ModuleInfo>>
      SelfModules;
  /// The names and self attributes the file binds to a torch.nn module
  /// built with inplace=True ("self.act" → "torch.nn.ReLU"), found once.
  const llvm::StringMap<std::string> &inPlaceModules();
  /// What a module's forward does first with the tensor it is given: saves
  /// it for backward (a Conv2d first), writes it in place (an in-place ReLU
  /// first), or neither as far as the checker follows (InputUses.cpp).
  enum class InputUse { Unknown, Saves, Writes };
  /// Of the module the name or attribute N holds, in scope S.
  InputUse firstInputUse(TSNode N, const Scope &S, unsigned Depth = 0);
  /// Of the module the construction Call makes (through factories).
  InputUse constructionInputUse(TSNode Call, const Scope &S, unsigned Depth);
  /// Of a module class's forward.
  InputUse forwardInputUse(const Scope &Forward, unsigned Depth);
  /// The file says `inplace=True` somewhere: only then are module calls
  /// asked whether they write their input.
  bool mayWriteInputsInPlace() const { return Source.contains("inplace"); }
  /// Whether N's subtree reads the name Name.
  bool mentions(TSNode N, StringRef Name) const;
  /// Whether the call passes inplace=True.
  bool inPlaceKeyword(TSNode Call) const;
  /// forwardInputUse by the forward's node.
  llvm::DenseMap<const void *, InputUse> ForwardInputUses;
  std::optional<llvm::StringMap<std::string>> InPlaceModules;
  friend class Lowering;
};

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
inline unsigned positionalArguments(TSNode Call) {
  unsigned Count = 0;
  forEachNamedChild(field(Call, "arguments"), [&](TSNode Argument) {
    Count += type(Argument) != "keyword_argument";
  });
  return Count;
}

template <typename Fn>
void Frontend::forEachCallArgument(TSNode Call, const Scope &Caller,
                                   const Scope &Called, Fn Each) const {
  const std::vector<TSNode> &Parameters = Called.Parameters;
  TSNode Callee = field(Call, "function");
  // A method called through an object, or a class constructed (its
  // __init__): the first parameter is self.
  bool Constructor = StringRef(Called.Name).ends_with(".__init__");
  auto Skip = [&](TSNode FunctionExpression) -> unsigned {
    return !isNull(Called.Class) &&
           (type(FunctionExpression) == "attribute" || Constructor);
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

} // namespace detail
} // namespace python
} // namespace ddpguard

#endif
