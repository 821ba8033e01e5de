//===- DDPObjects.h - DDP wrappers, objects and their construction --------===//
//
// Reads the C++ side of the model: which types are DDP wrappers (from the
// rules), which object an expression names, how each object was constructed
// (is broadcast_buffers on?) and whether its wrapped module's forward saves
// buffers for backward (SavedBuffers.h).
//
//===----------------------------------------------------------------------===//

#ifndef DDPGUARD_FRONTEND_DDPOBJECTS_H
#define DDPGUARD_FRONTEND_DDPOBJECTS_H

#include "Rules/RuleSet.h"
#include "SavedBuffers.h"
#include "clang/AST/ASTContext.h"
#include "clang/AST/Expr.h"
#include "clang/AST/ExprCXX.h"
#include "clang/Basic/SourceManager.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"
#include <functional>
#include <memory>
#include <optional>

namespace ddpguard {
namespace clangfe {

class CallerIndex;

/// Strips implicit nodes, parentheses and copies/moves of temporaries.
const clang::Expr *skipImplicit(const clang::Expr *E);

/// Source text of a node, as written.
llvm::StringRef sourceText(clang::SourceRange Range,
                           const clang::ASTContext &Context);

/// The qualified name of a class, naming the template for specializations
/// and leaving out inline namespaces (libc++'s std::__1).
std::string qualifiedName(const clang::CXXRecordDecl *Record);

/// Looks through references, pointers and std smart pointers.
clang::QualType pointee(clang::QualType Type);

/// The module class a TORCH_MODULE holder (a class derived from
/// torch::nn::ModuleHolder<Impl>) holds, or null for any other class.
const clang::CXXRecordDecl *heldModule(const clang::CXXRecordDecl *Record);

/// The type's members are reached with `->`: a pointer, a smart pointer
/// (std::shared_ptr, c10::intrusive_ptr...) or a TORCH_MODULE holder.
bool accessedThroughArrow(clang::QualType Type);

/// D belongs to a library (the C++ standard library, LibTorch): it is in a
/// system header or in one of their namespaces (std, torch, at, c10, c10d,
/// caffe2), however its header was included (-I, -isystem, -iquote).
bool isLibraryDecl(const clang::Decl *D);

/// Calls Visit on Root and every statement below it, lambda bodies excluded.
void forEachStmt(const clang::Stmt *Root,
                 const std::function<void(const clang::Stmt *)> &Visit);

/// A call that runs one forward (or one fused forward) on a DDP object.
struct ForwardCall {
  const clang::Expr *Call = nullptr;
  /// The expression that denotes the DDP object (e.g. `model`, `*p`).
  const clang::Expr *ObjectExpr = nullptr;
  /// The named object, or null for a temporary.
  const clang::ValueDecl *Object = nullptr;
  const WrapperRule *Rule = nullptr;
  bool IsFused = false;
  /// Called as `p->forward(x)`, or as `w(x)` on a TORCH_MODULE holder:
  /// the wrapper's other methods are reached with `->`.
  bool ThroughArrow = false;
  llvm::SmallVector<const clang::Expr *, 2> Args;
};

enum class BroadcastState {
  /// Nothing sets it: the rule's default.
  Default,
  SetTrue,
  SetFalse,
  /// Set by something we cannot evaluate, or constructed out of sight.
  Unknown,
};

struct Construction;

/// A construction that reaches a parameter through calls in the translation
/// unit.
struct CallerSource {
  /// Never a parameter's: the caller's variable, member or temporary.
  const Construction *From = nullptr;
  /// The calls that hand the object on, outermost first; the last one calls
  /// the parameter's function.
  llvm::SmallVector<const clang::CallExpr *, 2> Calls;
};

/// What the calls of a parameter's function in the translation unit pass for
/// it.
struct CallerSources {
  /// Every call was followed to a construction, and there is at least one.
  bool Complete = false;
  /// One per construction, in the order of the calls.
  llvm::SmallVector<CallerSource, 2> Sources;
  /// When not Complete: why, and where that shows (a call, or the function).
  std::string WhyNot;
  clang::SourceLocation WhyNotLoc;
};

/// How a DDP object was constructed.
struct Construction {
  const WrapperRule *Rule = nullptr;
  const clang::ValueDecl *Object = nullptr;
  /// The constructing expression: a CXXConstructExpr or a make_shared call.
  const clang::Expr *Expr = nullptr;
  llvm::SmallVector<const clang::Expr *, 4> Args;
  /// For a local: its declaration statement.
  const clang::DeclStmt *DeclStatement = nullptr;
  /// The call of a factory (a function in the translation unit that returns
  /// what it constructs) whose return statement holds Expr, if any: for the
  /// first object made by that factory.
  const clang::CallExpr *FactoryCall = nullptr;
  BroadcastState Broadcast = BroadcastState::Unknown;
  /// The expression whose value sets broadcast_buffers (setter argument,
  /// constructor argument or assigned value), if any.
  const clang::Expr *Setting = nullptr;
  /// OptionBuilder: the options argument and, when it names a variable, the
  /// variable.
  const clang::Expr *Options = nullptr;
  const clang::VarDecl *OptionsVar = nullptr;
  /// The options provably set the rule's once-per-backward buffer policy:
  /// buffers are broadcast only at the first forward after a backward. For
  /// a parameter: every caller's object that broadcasts sets it.
  bool OncePerBackward = false;
  /// The wrapped module's forward saves (or may save) a buffer for backward.
  bool HasBuffers = true;
  /// When HasBuffers is an assumption: what could not be followed, and where.
  std::string BuffersAssumption;
  clang::SourceLocation BuffersAssumedAt;
  /// A parameter: the constructions its callers pass. When they are
  /// Complete, Broadcast and HasBuffers join theirs.
  CallerSources Callers;

  bool broadcasts() const {
    return Broadcast != BroadcastState::SetFalse &&
           !(Broadcast == BroadcastState::Default && Rule &&
             !Rule->Broadcast.Default);
  }
};

class DDPObjects {
public:
  DDPObjects(clang::ASTContext &Context, const RuleSet &Rules,
             bool AssumeModulesHaveBuffers);
  ~DDPObjects();

  /// The rule for a DDP wrapper type, looking through references, pointers,
  /// smart pointers and TORCH_MODULE holders: a rule naming a holder's
  /// module class matches the holder, and one naming the holder matches its
  /// module class.
  const WrapperRule *ruleFor(clang::QualType Type);
  /// The object an expression of DDP type names, or null.
  const clang::ValueDecl *objectOf(const clang::Expr *E);
  /// S is a forward on a DDP object.
  std::optional<ForwardCall> matchForward(const clang::Stmt *S);
  /// Object must have a DDP type (ruleFor); otherwise its construction is
  /// Unknown and has no rule.
  const Construction &construction(const clang::ValueDecl *Object);
  /// The call of the factory that made Object, if any.
  const clang::CallExpr *factoryCall(const clang::ValueDecl *Object);
  /// The type of the module C wraps, as its rule says where it is; null
  /// when that is not visible.
  clang::QualType moduleType(const Construction &C) const;
  /// The construction of a DDP temporary (`DDP(...)`, make_shared) passed
  /// for Param, or null when E is no constructing expression.
  const Construction *temporaryConstruction(const clang::Expr *E,
                                            const clang::ParmVarDecl *Param);

  clang::ASTContext &context() const { return Context; }

private:
  void findConstructionExpr(Construction &C);
  /// A parameter's construction is its callers'.
  void joinCallers(Construction &C, const clang::ParmVarDecl &Param);
  void evaluateBroadcast(Construction &C);
  /// What sets an option: the argument of the last call of a setter on the
  /// options (a chain of setters, then setters called on an options
  /// variable before the construction, then its initialiser).
  struct OptionSetter {
    /// Null when nothing sets it.
    const clang::Expr *Argument = nullptr;
    /// The options could not be followed (a parameter, an unknown call).
    bool Unknown = false;
    /// The last options variable followed.
    const clang::VarDecl *Variable = nullptr;
  };
  OptionSetter findOptionSetter(const Construction &C,
                                const clang::Expr *Options,
                                llvm::StringRef Setter);
  void evaluateOptions(Construction &C, const clang::Expr *Options);
  /// E evaluates to the enumerator named Qualified.
  bool isEnumerator(const clang::Expr *E, llvm::StringRef Qualified);
  bool moduleHasBuffers(Construction &C);
  std::optional<bool> evaluateBool(const clang::Expr *E);

  clang::ASTContext &Context;
  const RuleSet &Rules;
  bool AssumeModulesHaveBuffers;
  /// The rule naming the holder of a module class, by the module class.
  const WrapperRule *holderRule(const clang::CXXRecordDecl *Module);

  llvm::DenseMap<const clang::Type *, const WrapperRule *> RuleCache;
  /// Filled on first use: holders named by rules, by their module class.
  std::optional<llvm::DenseMap<const clang::CXXRecordDecl *, const WrapperRule *>>
      HolderRules;
  SavedBuffers Saved{Context};
  /// By object; objects a factory makes share the one construction in it,
  /// so that it is fixed once.
  llvm::DenseMap<const clang::ValueDecl *, const Construction *> Constructions;
  std::vector<std::unique_ptr<Construction>> OwnedConstructions;
  llvm::DenseMap<const clang::Expr *, const Construction *> FactoryMade;
  llvm::DenseMap<const clang::ValueDecl *, const clang::CallExpr *>
      FactoryCalls;
  llvm::DenseMap<const clang::Expr *, std::unique_ptr<Construction>>
      Temporaries;
  /// Built on the first parameter whose construction is asked for.
  std::unique_ptr<CallerIndex> Callers;
};

} // namespace clangfe
} // namespace ddpguard

#endif
