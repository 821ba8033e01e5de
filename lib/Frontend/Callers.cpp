//===- Callers.cpp --------------------------------------------------------===//

#include "Callers.h"
#include "clang/AST/DeclCXX.h"
#include "clang/AST/RecursiveASTVisitor.h"

using namespace clang;

namespace ddpguard {
namespace clangfe {

/// A lambda's call operators (one per instantiation of a generic lambda)
/// share its class as their key.
static const Decl *keyOf(const FunctionDecl *Function) {
  if (const auto *Method = dyn_cast<CXXMethodDecl>(Function))
    if (Method->getParent()->isLambda())
      return Method->getParent()->getCanonicalDecl();
  return Function->getCanonicalDecl();
}

std::string describeCallee(const FunctionDecl *Function) {
  if (const auto *Method = dyn_cast<CXXMethodDecl>(Function))
    if (Method->getParent()->isLambda())
      return "the lambda";
  return "'" + Function->getNameAsString() + "'";
}

std::string describeChain(const CallerSource &Source) {
  std::string Chain;
  for (const CallExpr *Call : Source.Calls) {
    if (!Chain.empty())
      Chain += " \u2192 ";
    Chain += describeCallee(Call->getDirectCallee());
  }
  return Chain;
}

namespace {

/// Collects calls and every other use of functions and lambdas.
class UseCollector : public RecursiveASTVisitor<UseCollector> {
public:
  bool shouldVisitTemplateInstantiations() const { return true; }

  bool TraverseDecl(Decl *D) {
    if (!D)
      return true;
    // Calls in system headers pass nothing of the user's; a template's
    // pattern is seen through its instantiations.
    if (!isa<TranslationUnitDecl>(D) && isLibraryDecl(D))
      return true;
    if (const auto *Function = dyn_cast<FunctionDecl>(D))
      if (Function->isDependentContext())
        return true;
    return RecursiveASTVisitor::TraverseDecl(D);
  }

  bool VisitCallExpr(CallExpr *Call) {
    const FunctionDecl *Callee = Call->getDirectCallee();
    if (!Callee)
      return true;
    Index[keyOf(Callee)].Calls.push_back(Call);
    CalleeNodes.insert(Call->getCallee()->IgnoreParenImpCasts());
    if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(Call))
      if (Op->getOperator() == OO_Call && Op->getNumArgs() > 0) {
        const Expr *Object = skipImplicit(Op->getArg(0));
        if (isa<DeclRefExpr>(Object))
          CallObjects.insert(Object);
        else if (const auto *Lambda = dyn_cast<LambdaExpr>(Object))
          Named.insert(Lambda->getLambdaClass()->getCanonicalDecl());
      }
    return true;
  }

  bool VisitDeclRefExpr(DeclRefExpr *E) {
    if (const auto *Function = dyn_cast<FunctionDecl>(E->getDecl()))
      Refs.push_back({keyOf(Function), E});
    else if (const auto *Var = dyn_cast<VarDecl>(E->getDecl()))
      if (const CXXRecordDecl *Closure = closureOf(Var))
        Refs.push_back({Closure, E});
    return true;
  }

  bool VisitMemberExpr(MemberExpr *E) {
    if (const auto *Method = dyn_cast<CXXMethodDecl>(E->getMemberDecl()))
      Refs.push_back({keyOf(Method), E});
    return true;
  }

  bool VisitVarDecl(VarDecl *Var) {
    if (const CXXRecordDecl *Closure = closureOf(Var))
      if (Var->getInit() && isa<LambdaExpr>(skipImplicit(Var->getInit())))
        Named.insert(Closure);
    return true;
  }

  bool VisitLambdaExpr(LambdaExpr *Lambda) {
    Lambdas.push_back(Lambda);
    return true;
  }

  /// Marks the escapes once everything is visited.
  llvm::DenseMap<const Decl *, CallerIndex::Uses> finish() {
    for (auto [Key, E] : Refs)
      if (!CalleeNodes.contains(E) && !CallObjects.contains(E) &&
          !Index[Key].Escape)
        Index[Key].Escape = E;
    // A lambda neither stored in a variable nor called where it is written
    // is handed to code that may call it.
    for (const LambdaExpr *Lambda : Lambdas) {
      const Decl *Key = Lambda->getLambdaClass()->getCanonicalDecl();
      if (!Named.contains(Key) && !Index[Key].Escape)
        Index[Key].Escape = Lambda;
    }
    return std::move(Index);
  }

private:
  static const CXXRecordDecl *closureOf(const VarDecl *Var) {
    const CXXRecordDecl *Record =
        Var->getType().getNonReferenceType()->getAsCXXRecordDecl();
    return Record && Record->isLambda() ? Record->getCanonicalDecl() : nullptr;
  }

  llvm::DenseMap<const Decl *, CallerIndex::Uses> Index;
  llvm::DenseSet<const Expr *> CalleeNodes;
  /// Closure variables called with `f(...)`.
  llvm::DenseSet<const Expr *> CallObjects;
  std::vector<std::pair<const Decl *, const Expr *>> Refs;
  /// Lambda classes stored in a variable or called where written.
  llvm::DenseSet<const Decl *> Named;
  std::vector<const LambdaExpr *> Lambdas;
};

} // namespace

CallerIndex::CallerIndex(ASTContext &Context, DDPObjects &Objects)
    : Context(Context), Objects(Objects) {
  UseCollector Collector;
  Collector.TraverseDecl(Context.getTranslationUnitDecl());
  Index = Collector.finish();
}

const CallerIndex::Uses *CallerIndex::usesOf(const FunctionDecl *Function) {
  auto It = Index.find(keyOf(Function));
  return It == Index.end() ? nullptr : &It->second;
}

static bool notFollowed(CallerSources &Result, std::string Why,
                        SourceLocation Loc) {
  Result.WhyNot = std::move(Why);
  Result.WhyNotLoc = Loc;
  return false;
}

/// Other files may call Function: it is visible outside the translation
/// unit, and no lambda.
static bool callableElsewhere(const FunctionDecl &Function) {
  const auto *Method = dyn_cast<CXXMethodDecl>(&Function);
  return Function.isExternallyVisible() &&
         !(Method && Method->getParent()->isLambda());
}

CallerSources CallerIndex::resolve(const ParmVarDecl &Param) {
  return resolveCalls(Param, nullptr);
}

CallerSources
CallerIndex::resolveAcrossFiles(const ParmVarDecl &Param,
                                llvm::SmallVectorImpl<OpenEnd> &Open) {
  return resolveCalls(Param, &Open);
}

CallerSources
CallerIndex::resolveArgument(const CallExpr &Call, const ParmVarDecl &Param,
                             llvm::SmallVectorImpl<OpenEnd> &Open) {
  CallerSources Result;
  Result.Complete = follow(Call, Param, Result, &Open);
  return Result;
}

CallerSources CallerIndex::resolveCalls(const ParmVarDecl &Param,
                                        llvm::SmallVectorImpl<OpenEnd> *Open) {
  CallerSources Result;
  const auto *Function = dyn_cast<FunctionDecl>(Param.getDeclContext());
  if (!Function)
    return Result;
  std::string Name = describeCallee(Function);
  const Uses *U = usesOf(Function);
  const auto *Method = dyn_cast<CXXMethodDecl>(Function);
  if (Method && Method->isVirtual()) {
    notFollowed(Result,
                Name + " is virtual: calls through a base class are not "
                       "followed",
                Function->getLocation());
    return Result;
  }
  if (U && U->Escape) {
    notFollowed(Result,
                Name + " is used here other than by a direct call, so it may "
                       "be called where it is not seen",
                U->Escape->getExprLoc());
    return Result;
  }
  if (!U || U->Calls.empty()) {
    if (Open && callableElsewhere(*Function)) {
      Open->push_back({&Param, {}});
      Result.Complete = true;
    } else {
      notFollowed(Result, Name + " is not called in this translation unit",
                  Function->getLocation());
    }
    return Result;
  }

  size_t OpenBefore = Open ? Open->size() : 0;
  bool Followed = true;
  InProgress.insert(&Param);
  for (const CallExpr *Call : U->Calls)
    if (!(Followed = follow(*Call, Param, Result, Open)))
      break;
  InProgress.erase(&Param);
  if (Followed && Result.Sources.empty() &&
      (!Open || Open->size() == OpenBefore))
    Followed = notFollowed(Result, Name + " is only called by itself",
                           Function->getLocation());
  Result.Complete = Followed;
  return Result;
}

bool CallerIndex::follow(const CallExpr &Call, const ParmVarDecl &Param,
                         CallerSources &Result,
                         llvm::SmallVectorImpl<OpenEnd> *Open) {
  auto Add = [&](CallerSource Source) {
    if (llvm::none_of(Result.Sources, [&](const CallerSource &S) {
          return S.From == Source.From;
        }))
      Result.Sources.push_back(std::move(Source));
  };
  const auto *Function = cast<FunctionDecl>(Param.getDeclContext());
  std::string Name = describeCallee(Function);
  std::string ParamName = "'" + Param.getNameAsString() + "'";
  // A call operator's object is its first argument.
  unsigned Index =
      Param.getFunctionScopeIndex() +
      (isa<CXXOperatorCallExpr>(Call) && isa<CXXMethodDecl>(Function) ? 1 : 0);
  const Expr *Arg = Index < Call.getNumArgs() ? Call.getArg(Index) : nullptr;
  if (!Arg || isa<CXXDefaultArgExpr>(Arg))
    return notFollowed(Result,
                       "the call of " + Name + " here passes no argument for " +
                           ParamName,
                       Call.getBeginLoc());
  const ValueDecl *Object = Objects.objectOf(Arg);
  if (!Object || !Objects.ruleFor(Object->getType())) {
    if (const Construction *Temporary =
            Objects.temporaryConstruction(Arg, &Param)) {
      Add({Temporary, {&Call}});
      return true;
    }
    return notFollowed(Result,
                       "the object passed here for " + ParamName +
                           " is not followed to its construction",
                       Arg->getExprLoc());
  }
  // A recursive call passes the parameter itself on.
  if (Object == &Param)
    return true;
  const auto *CallerParam = dyn_cast<ParmVarDecl>(Object);
  if (CallerParam && InProgress.contains(CallerParam))
    return notFollowed(Result,
                       "the call of " + Name + " here is part of a recursion",
                       Call.getBeginLoc());
  if (CallerParam) {
    llvm::SmallVector<OpenEnd, 1> CallerOpen;
    CallerSources Callers = Open ? resolveCalls(*CallerParam, &CallerOpen)
                                 : Objects.construction(CallerParam).Callers;
    if (!Callers.Complete)
      return notFollowed(Result, Callers.WhyNot, Callers.WhyNotLoc);
    for (const CallerSource &Source : Callers.Sources) {
      CallerSource Chained = Source;
      Chained.Calls.push_back(&Call);
      Add(std::move(Chained));
    }
    for (OpenEnd &End : CallerOpen) {
      End.Calls.push_back(&Call);
      Open->push_back(std::move(End));
    }
    return true;
  }
  const Construction &From = Objects.construction(Object);
  if (!From.Expr)
    return notFollowed(Result,
                       "the construction of '" + Object->getNameAsString() +
                           "', passed here for " + ParamName +
                           ", is not visible",
                       Arg->getExprLoc());
  Add({&From, {&Call}});
  return true;
}

std::string describeBroadcast(const Construction &From) {
  if (From.OncePerBackward)
    return "buffers are broadcast once per backward";
  if (From.Broadcast == BroadcastState::Unknown)
    return "'broadcast_buffers' is set to a value not known at compile time; "
           "assuming true";
  if (!From.broadcasts())
    return "'broadcast_buffers' is false";
  if (From.Broadcast == BroadcastState::SetTrue)
    return "'broadcast_buffers' is set to true";
  return "'broadcast_buffers' is true by default";
}

} // namespace clangfe
} // namespace ddpguard
