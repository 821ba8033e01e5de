//===- ClangFrontend.h - One C++ function as an EventGraph ----------------===//
//
// Translates a function body, through Clang's CFG, into the language-neutral
// EventGraph of Model/: forwards on DDP objects (with their grad mode),
// backwards and autograd::grad calls, and how values derive from each other.
// Calls to helpers that forward or backward are replaced by their summaries.
//
//===----------------------------------------------------------------------===//

#ifndef DDPGUARD_FRONTEND_CLANGFRONTEND_H
#define DDPGUARD_FRONTEND_CLANGFRONTEND_H

#include "DDPObjects.h"
#include "ModuleCalls.h"
#include "Model/EventGraph.h"
#include "clang/AST/Decl.h"
#include <optional>

namespace ddpguard {
namespace clangfe {

/// What a call to a helper does, in the order it does it.
struct Summary {
  enum class ObjectKind { Parameter, Member, Variable };
  struct Effect {
    bool IsForward = true;
    clang::SourceLocation Loc;
    // A forward: on which object, in which grad mode, and whether its output
    // flows into the returned value.
    ObjectKind Kind = ObjectKind::Variable;
    unsigned Parameter = 0;
    const clang::ValueDecl *Object = nullptr;
    bool GradEnabled = true;
    bool Repeats = false;
    bool Returned = false;
    // A backward: through which parameters, captured variables and earlier
    // forwards.
    llvm::SmallVector<unsigned, 2> ParameterRoots;
    llvm::SmallVector<const clang::VarDecl *, 2> CaptureRoots;
    llvm::SmallVector<unsigned, 2> ForwardRoots;
    bool RetainGraph = false;
    bool ThroughUnknown = false;
    /// Through what escaped before the call (members, globals, opaque
    /// calls' results), the caller's as much as the helper's.
    bool ThroughEscaped = false;
  };
  std::vector<Effect> Effects;
  /// (parameter, forward effect): the forward's output is stored into the
  /// parameter (a container passed by reference).
  std::vector<std::pair<unsigned, unsigned>> StoredOutputs;
  /// (variable, forward effect): a lambda stores the forward's output into a
  /// variable of its caller captured by reference.
  std::vector<std::pair<const clang::VarDecl *, unsigned>> StoredCaptures;
  /// Captured variables whose history flows into the returned value.
  llvm::SmallVector<const clang::VarDecl *, 2> ReturnedCaptures;
  /// The returned value may carry what escaped before the call.
  bool ReturnsEscaped = false;
  /// Forward effects and parameters whose history escapes (into a member, a
  /// global or a call whose body is not visible).
  llvm::SmallVector<unsigned, 2> EscapedForwards;
  llvm::SmallVector<unsigned, 2> EscapedParameters;
};

class SummaryProvider {
public:
  virtual ~SummaryProvider() = default;
  /// The summary of a callee that forwards or backwards, or null.
  virtual const Summary *summaryFor(const clang::FunctionDecl *Callee) = 0;
  /// Callee (visible) or a function it calls calls a function whose body is
  /// not visible, or names a member or a global: values may escape through
  /// it or come back out of it.
  virtual bool reachesOutOfSight(const clang::FunctionDecl *Callee) = 0;
};

/// A position a diagnostic points at.
struct Site {
  /// The call in the translated function.
  const clang::Expr *Call = nullptr;
  /// The helper whose body holds the event, if it came from a summary.
  const clang::FunctionDecl *Via = nullptr;
  clang::SourceLocation Inner;
  bool Repeats = false;
  /// The helper is a lambda written among the call's arguments and run by a
  /// library algorithm: diagnostics point at the event inside it.
  bool AtInner = false;
};

/// A captured variable of a lambda, standing in its body for the caller's.
struct Capture {
  const clang::VarDecl *Variable = nullptr;
  model::ValueId Value = 0;
  model::OriginId Origin = 0;
  bool ByReference = false;
};

/// Where an escape or a read of escaped values happens: the expression, and
/// the block and index in it of the event it precedes.
struct EscapePoint {
  const clang::Expr *At = nullptr;
  unsigned Block = 0;
  unsigned Index = 0;
};

struct TranslatedFunction {
  const clang::FunctionDecl *Function = nullptr;
  model::EventGraph Graph;
  std::vector<Site> Sites;
  /// By ObjectId.
  std::vector<const clang::ValueDecl *> Objects;
  /// Each parameter set and the module (or DDP object) whose it is.
  std::vector<std::pair<model::TensorSetId, const clang::ValueDecl *>>
      ParameterSetModules;
  /// The steps that write, by their site.
  std::vector<std::pair<model::SiteId, const Optimizer *>> Steps;
  /// The in-place writes to parameters outside optimizers, by their site.
  std::vector<std::pair<model::SiteId, ParameterWrite>> ParameterWrites;
  /// With ValueWrites: the in-place writes on values, by their site, and the
  /// backwards that stand for the caller's backward through the result of a
  /// module's forward (at its return statements).
  std::vector<std::pair<model::SiteId, TensorWrite>> ValueWrites;
  std::vector<model::SiteId> ResultBackwards;
  /// With SilentWrites: the steps that write without bumping the version
  /// counters (LibTorch's SGD) and the in-place writes through `x.data()`,
  /// by their site; their events are Silent.
  std::vector<std::pair<model::SiteId, const Optimizer *>> SilentSteps;
  std::vector<std::pair<model::SiteId, ParameterWrite>> DataWrites;
  /// By parameter index: the origin standing for the parameter's history.
  std::vector<model::OriginId> ParameterOrigins;
  /// By parameter index: the value standing for the parameter.
  std::vector<model::ValueId> ParameterValues;
  /// For a lambda's call operator: the variables it captures.
  std::vector<Capture> Captures;
  /// Blocks that lie on a cycle.
  std::vector<bool> InLoop;
  /// Blocks in reverse post-order.
  std::vector<unsigned> Order;
  /// Calls of functions whose body we cannot see whose result may carry
  /// the history of values that escaped before them, and the calls and
  /// stores through which values escaped (into such calls, members and
  /// globals).
  std::vector<EscapePoint> EscapedReads;
  std::vector<EscapePoint> Escapes;
  /// The value standing for everything that escaped, when something did or
  /// was read back: Graph.withoutReadsOf(*EscapedPool) is the function with
  /// those calls handing back only their arguments' history. Its input
  /// origin, which members and globals start with too, stands for what
  /// escaped before the call.
  std::optional<model::ValueId> EscapedPool;
  model::OriginId EscapedOrigin = 0;
  /// The body could not be translated (invalid code, no CFG).
  bool Failed = false;
};

/// With Modules, forwards of plain modules, optimizer steps and in-place
/// writes to parameters are events too, and every forward saves its
/// module's parameters as ModuleCalls says; without, the graph has the DDP
/// events alone. With ValueWrites too, the operations SavedOperands.def says
/// save a tensor are ops, values have storage, in-place writes on values are
/// writes, and a module's forward ends in a backward through its result.
/// With SilentWrites too (and Modules), the writes that leave the version
/// counters as they were are Silent write events.
TranslatedFunction translateFunction(const clang::FunctionDecl *Function,
                                     DDPObjects &Objects,
                                     SummaryProvider &Summaries,
                                     ModuleCalls *Modules = nullptr,
                                     bool ValueWrites = false,
                                     bool SilentWrites = false);

/// A method named forward of a torch::nn::Module subclass: whatever calls it
/// backpropagates through its result.
bool isModuleForward(const clang::FunctionDecl *Function);

/// The call operators of a callable argument whose body we can see: a lambda
/// written in place (Inline) or a variable initialised with one; for a
/// generic lambda, its instantiations.
llvm::SmallVector<const clang::CXXMethodDecl *, 1>
callOperators(const clang::Expr *Argument, bool &Inline);

/// The call's callee if it is a user function whose body we can see.
const clang::FunctionDecl *visibleCallee(const clang::CallExpr *Call,
                                         const clang::SourceManager &SM);

} // namespace clangfe
} // namespace ddpguard

#endif
