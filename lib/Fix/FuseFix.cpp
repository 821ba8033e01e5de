//===- FuseFix.cpp - Consecutive forwards into one fused forward ----------===//

#include "Fixes.h"
#include "Torch/InPlace.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/Stmt.h"
#include "clang/Lex/Lexer.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

using namespace clang;
using namespace ddpguard::clangfe;

namespace ddpguard {
namespace fix {

/// One statement that stores one forward's output: `auto o = D(x);` or
/// `o = D(x);`.
struct ForwardStatement {
  const Stmt *Statement = nullptr;
  const ValueDecl *Output = nullptr;
  bool IsDeclaration = false;
  ForwardCall Forward;
};

namespace {

std::optional<ForwardStatement> asForwardStatement(const Stmt *S,
                                                   DDPObjects &Objects) {
  ForwardStatement Result;
  Result.Statement = S;
  const Expr *Value = nullptr;
  if (const auto *Decl = dyn_cast<DeclStmt>(S)) {
    const auto *Var =
        Decl->isSingleDecl() ? dyn_cast<VarDecl>(Decl->getSingleDecl()) : nullptr;
    if (!Var || !Var->getInit() || Var->getType()->isReferenceType() ||
        isa<DecompositionDecl>(Var) || !Var->hasLocalStorage())
      return std::nullopt;
    Result.Output = Var;
    Result.IsDeclaration = true;
    Value = Var->getInit();
  } else if (const auto *E = dyn_cast<Expr>(S)) {
    E = E->IgnoreImplicit();
    const Expr *Target = nullptr;
    if (const auto *Assign = dyn_cast<BinaryOperator>(E);
        Assign && Assign->getOpcode() == BO_Assign) {
      Target = Assign->getLHS();
      Value = Assign->getRHS();
    } else if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(E);
               Op && Op->getOperator() == OO_Equal && Op->getNumArgs() == 2) {
      Target = Op->getArg(0);
      Value = Op->getArg(1);
    }
    const auto *Ref = dyn_cast_or_null<DeclRefExpr>(skipImplicit(Target));
    if (!Ref)
      return std::nullopt;
    Result.Output = Ref->getDecl();
  }
  if (!Value)
    return std::nullopt;
  Value = skipImplicit(Value);
  // `T o{D(x)}`: a braced list of one element.
  if (const auto *List = dyn_cast<InitListExpr>(Value);
      List && List->getNumInits() == 1)
    Value = skipImplicit(List->getInit(0));
  std::optional<ForwardCall> Forward = Objects.matchForward(Value);
  if (!Forward || Forward->IsFused || !Forward->Object)
    return std::nullopt;
  Result.Forward = *Forward;
  return Result;
}

bool mentions(const Expr *E, const ValueDecl *Decl) {
  bool Found = false;
  forEachStmt(E, [&](const Stmt *S) {
    if (const auto *Ref = dyn_cast<DeclRefExpr>(S))
      Found |= Ref->getDecl() == Decl;
  });
  return Found;
}

FixOutcome reason(std::string Why) {
  FixOutcome Outcome;
  Outcome.Reason = std::move(Why);
  return Outcome;
}

/// The text of E as written in the file, or nothing when it cannot be
/// spelled there: part of it comes from a macro's body (`D((X) * 2.0)`), or
/// it spans pieces of several macro arguments. A whole macro argument, or a
/// whole macro invocation, is spelled as written.
std::optional<std::string> spelledText(const Expr *E,
                                       const ASTContext &Context) {
  const SourceManager &SM = Context.getSourceManager();
  CharSourceRange Range = Lexer::makeFileCharRange(
      CharSourceRange::getTokenRange(E->getSourceRange()), SM,
      Context.getLangOpts());
  if (Range.isInvalid())
    return std::nullopt;
  bool Invalid = false;
  StringRef Text =
      Lexer::getSourceText(Range, SM, Context.getLangOpts(), &Invalid);
  if (Invalid || Text.empty())
    return std::nullopt;
  return Text.str();
}

/// Why E cannot be spelled: the macro it is computed in.
std::string unspellable(llvm::StringRef What, const Expr *E,
                        const ASTContext &Context) {
  SourceLocation Loc = E->getBeginLoc();
  StringRef Macro =
      Loc.isMacroID() ? Lexer::getImmediateMacroName(
                            Loc, Context.getSourceManager(),
                            Context.getLangOpts())
                      : StringRef();
  if (Macro.empty())
    return (What + " cannot be spelled as written").str();
  return (What + " inside the expansion of macro '" + Macro +
          "' and cannot be spelled outside it")
      .str();
}

/// Arg needs no local of its own to keep the order of evaluation: reading it
/// has no side effect and nothing it reads can change in between. A local
/// variable or parameter (through implicit conversions and copies), or a
/// constant.
bool isPlain(const Expr *Arg, const ASTContext &Context) {
  const Expr *E = Arg->IgnoreImplicit()->IgnoreParens();
  while (const auto *Construct = dyn_cast<CXXConstructExpr>(E)) {
    if (isa<CXXTemporaryObjectExpr>(Construct) || Construct->getNumArgs() != 1 ||
        !Construct->getConstructor() ||
        !Construct->getConstructor()->isCopyOrMoveConstructor())
      break;
    E = Construct->getArg(0)->IgnoreImplicit()->IgnoreParens();
  }
  if (const auto *Ref = dyn_cast<DeclRefExpr>(E)) {
    if (isa<EnumConstantDecl>(Ref->getDecl()))
      return true;
    if (const auto *Var = dyn_cast<VarDecl>(Ref->getDecl()))
      if (Var->hasLocalStorage() || isa<ParmVarDecl>(Var))
        return true;
  }
  return !E->isValueDependent() && !E->HasSideEffects(Context) &&
         E->isEvaluatable(Context);
}

/// Where a statement's text ends: after its ';'.
SourceLocation statementEnd(const ForwardStatement &Statement,
                            const ASTContext &Context) {
  const SourceManager &SM = Context.getSourceManager();
  SourceLocation End = Statement.Statement->getEndLoc();
  if (Statement.IsDeclaration)
    return Lexer::getLocForEndOfToken(End, 0, SM, Context.getLangOpts());
  return Lexer::findLocationAfterToken(End, tok::semi, SM,
                                       Context.getLangOpts(),
                                       /*SkipTrailingWhitespaceAndNewLine=*/false);
}

/// The whitespace that starts the line Loc is on.
std::string indentOf(SourceLocation Loc, const SourceManager &SM) {
  auto [File, Offset] = SM.getDecomposedLoc(Loc);
  StringRef Buffer = SM.getBufferData(File);
  size_t LineStart = Buffer.rfind('\n', Offset);
  LineStart = LineStart == StringRef::npos ? 0 : LineStart + 1;
  StringRef Line = Buffer.slice(LineStart, Offset);
  return Line.take_while([](char C) { return C == ' ' || C == '\t'; }).str();
}

/// The range that removes a statement from Begin to End (after its ';'):
/// its whole line when nothing else is on it, else the statement and the
/// blanks on one side, so that comments and the rest of the line stay. A
/// whole line goes with the line break before it: Clang's edits widen a
/// removal that a blank follows by that blank, which would take the next
/// line's first blank.
CharSourceRange removalRange(SourceLocation Begin, SourceLocation End,
                             const SourceManager &SM) {
  auto [File, BeginOffset] = SM.getDecomposedLoc(Begin);
  unsigned EndOffset = SM.getFileOffset(End);
  StringRef Buffer = SM.getBufferData(File);
  auto Blank = [](char C) { return C == ' ' || C == '\t'; };
  unsigned Before = BeginOffset;
  while (Before > 0 && Blank(Buffer[Before - 1]))
    --Before;
  unsigned After = EndOffset;
  while (After < Buffer.size() && Blank(Buffer[After]))
    ++After;
  bool LineStarts = Before > 0 && Buffer[Before - 1] == '\n';
  bool LineEnds = After == Buffer.size() || Buffer[After] == '\n' ||
                  Buffer[After] == '\r';
  auto At = [&](unsigned Offset) {
    return Begin.getLocWithOffset(int(Offset) - int(BeginOffset));
  };
  if (LineStarts && LineEnds) {
    unsigned Break = Before - 1;
    if (Break > 0 && Buffer[Break - 1] == '\r')
      --Break;
    return CharSourceRange::getCharRange(At(Break), At(After));
  }
  if (!LineEnds)
    return CharSourceRange::getCharRange(Begin, At(After));
  return CharSourceRange::getCharRange(At(Before), End);
}


/// What a modified expression denotes: a local variable it names or views
/// (`w`, `w.grad()`, `w[0]`, `torch::flatten(w)`), a fresh temporary
/// (`(a * b)`, `torch::rand(...)`), or something else: a member, a global,
/// what a pointer points to.
struct Target {
  enum Kind { Fresh, Local, Other } K;
  const VarDecl *Var = nullptr;
};

Target targetOf(const Expr *E) {
  while ((E = skipImplicit(E))) {
    if (const auto *Ref = dyn_cast<DeclRefExpr>(E)) {
      const auto *Var = dyn_cast<VarDecl>(Ref->getDecl());
      if (Var && Var->hasLocalStorage() && !Var->getType()->isReferenceType())
        return {Target::Local, Var};
      return {Target::Other};
    }
    if (const auto *Member = dyn_cast<MemberExpr>(E)) {
      E = Member->getBase();
    } else if (const auto *Call = dyn_cast<CXXMemberCallExpr>(E)) {
      E = Call->getImplicitObjectArgument();
    } else if (const auto *Subscript = dyn_cast<ArraySubscriptExpr>(E)) {
      E = Subscript->getBase();
    } else if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(E)) {
      OverloadedOperatorKind Kind = Op->getOperator();
      if (Kind == OO_Subscript || Op->isAssignmentOp())
        E = Op->getArg(0);
      else if (Op->getNumArgs() == 1 && (Kind == OO_Star || Kind == OO_Arrow))
        return {Target::Other};
      else
        return {Target::Fresh};
    } else if (const auto *Call = dyn_cast<CallExpr>(E)) {
      // A LibTorch function of a tensor may return a view of it.
      const FunctionDecl *Callee = Call->getDirectCallee();
      if (!Callee || !isTorchDecl(Callee) || Call->getNumArgs() == 0 ||
          !isTensor(Call->getArg(0)->getType()))
        return {Target::Fresh};
      E = Call->getArg(0);
    } else if (isa<BinaryOperator>(E) || isa<InitListExpr>(E) ||
               isa<CXXTemporaryObjectExpr>(E) || isa<IntegerLiteral>(E) ||
               isa<FloatingLiteral>(E) || isa<CXXBoolLiteralExpr>(E)) {
      return {Target::Fresh};
    } else {
      return {Target::Other};
    }
  }
  return {Target::Other};
}

/// What a LibTorch function in E draws random numbers with, or "".
std::string randomDraw(const Stmt *E) {
  std::string Name;
  std::function<void(const Stmt *)> Visit = [&](const Stmt *S) {
    if (!S || !Name.empty())
      return;
    if (const auto *Call = dyn_cast<CallExpr>(S))
      if (drawsRandomNumbers(Call->getDirectCallee()))
        Name = Call->getDirectCallee()->getNameAsString();
    for (const Stmt *Child : S->children())
      Visit(Child);
  };
  Visit(E);
  return Name;
}

/// The names of the variables an expression reads.
llvm::StringSet<> variablesIn(const Expr *E) {
  llvm::StringSet<> Names;
  forEachStmt(E, [&](const Stmt *S) {
    if (const auto *Ref = dyn_cast<DeclRefExpr>(S))
      if (isa<VarDecl>(Ref->getDecl()))
        Names.insert(Ref->getDecl()->getName());
  });
  return Names;
}

unsigned lineOf(const Stmt *S, const ASTContext &Context) {
  return Context.getSourceManager().getPresumedLineNumber(S->getBeginLoc());
}

} // namespace

/// What a statement between the forwards does that decides whether a
/// forward may move past it.
struct CrossedStatement {
  const Stmt *Statement = nullptr;
  /// Why no forward may move past it, or "".
  std::string Barrier;
  /// The names it uses, the variables it declares and those it assigns.
  llvm::StringSet<> Uses, Declares, Assigns;
  /// A LibTorch function it calls that draws random numbers, or "".
  std::string Draws;
};

namespace {

/// Collects what S does. A forward may move past a statement only if the
/// statement cannot see the difference and the forward reads the same:
/// - no control flow: it is a declaration or an expression;
/// - it does not use the DDP object, call a module (the wrapped one or one
///   sharing its parameters) or an optimizer, and runs no backward(),
///   step() or zero_grad(): they change the parameters or gradients the
///   forward reads, or its broadcasts;
/// - it sets no grad mode, calls nothing whose effects are unknown (user
///   functions, lambdas, std::function), modifies no tensor variable, member
///   or global in place (any may alias a parameter or an argument);
/// - torch::autograd::grad may be crossed: it returns the gradients of its
///   inputs and, unlike backward, accumulates nothing into the parameters.
/// Its uses, declarations, assignments and random draws are judged per
/// forward (FuseFixer::whyCannotCross).
class StatementEffects {
public:
  StatementEffects(CrossedStatement &Result, DDPObjects &Objects)
      : Result(Result), Objects(Objects) {}

  void visit(const Stmt *S) {
    if (!S || !Result.Barrier.empty())
      return;
    if (const auto *Ref = dyn_cast<DeclRefExpr>(S)) {
      // An operator function has no identifier.
      if (const IdentifierInfo *Name = Ref->getDecl()->getIdentifier())
        Result.Uses.insert(Name->getName());
      if (Objects.ruleFor(Ref->getType()))
        block("uses the DDP object '" + Ref->getDecl()->getNameAsString() +
              "'");
    } else if (const auto *Member = dyn_cast<MemberExpr>(S)) {
      if (Objects.ruleFor(Member->getType()))
        block("uses the DDP object '" +
              Member->getMemberDecl()->getNameAsString() + "'");
    } else if (const auto *Decls = dyn_cast<DeclStmt>(S)) {
      for (const Decl *D : Decls->decls())
        if (const auto *Var = dyn_cast<VarDecl>(D)) {
          // Nor has a structured binding's declaration.
          if (Var->getIdentifier())
            Result.Declares.insert(Var->getName());
          const CXXRecordDecl *Record = Var->getType()->getAsCXXRecordDecl();
          if (Record && isTorchDecl(Record) && Record->getIdentifier() &&
              (Record->getName().ends_with("Guard") ||
               Record->getName().ends_with("Mode")))
            block("declares '" + Var->getNameAsString() +
                  "', a grad mode guard");
        }
    } else if (isa<CXXThrowExpr>(S)) {
      block("throws");
    } else if (const auto *Call = dyn_cast<CallExpr>(S)) {
      visitCall(Call);
    } else if (const auto *Construct = dyn_cast<CXXConstructExpr>(S)) {
      const CXXConstructorDecl *Ctor = Construct->getConstructor();
      if (Ctor && Ctor->isUserProvided() && !isTorchDecl(Ctor) &&
          outermostNamespace(Ctor) != "std")
        block("constructs a '" + Ctor->getParent()->getNameAsString() +
              "', whose effects are not known");
    } else if (const auto *Binary = dyn_cast<BinaryOperator>(S)) {
      if (Binary->isAssignmentOp())
        assigns(Binary->getLHS());
    } else if (const auto *Unary = dyn_cast<UnaryOperator>(S)) {
      if (Unary->isIncrementDecrementOp())
        assigns(Unary->getSubExpr());
    }
    // Lambda bodies too: a lambda may be called later in the statement.
    for (const Stmt *Child : S->children())
      visit(Child);
  }

private:
  void block(const std::string &Why) {
    if (Result.Barrier.empty())
      Result.Barrier = Why;
  }

  /// A variable, or what a pointer or a member names, is assigned as a
  /// whole (a builtin assignment, or a tensor variable rebound).
  void assigns(const Expr *Assigned) {
    Target T = targetOf(Assigned);
    if (T.K == Target::Local)
      Result.Assigns.insert(T.Var->getName());
    else if (T.K == Target::Other)
      block("assigns a member, a global or what a pointer points to");
  }

  void modifiesInPlace(const Expr *Operand, StringRef Name) {
    Target T = targetOf(Operand);
    if (T.K == Target::Local)
      block("modifies '" + T.Var->getNameAsString() + "' in place ('" +
            Name.str() + "'), maybe a parameter or an argument");
    else if (T.K == Target::Other)
      block("modifies a member, a global or what a pointer points to in "
            "place ('" + Name.str() + "')");
  }

  void visitCall(const CallExpr *Call) {
    const FunctionDecl *Callee = Call->getDirectCallee();
    if (!Callee) {
      block("calls a function through a pointer");
      return;
    }
    std::string Name = Callee->getNameAsString();
    const auto *Method = dyn_cast<CXXMethodDecl>(Callee);
    const CXXRecordDecl *Parent = Method ? Method->getParent() : nullptr;
    const Expr *Object = nullptr;
    if (const auto *MemberCall = dyn_cast<CXXMemberCallExpr>(Call))
      Object = MemberCall->getImplicitObjectArgument();
    else if (Call->getNumArgs() > 0)
      Object = Call->getArg(0);
    if (Name == "backward" || Name == "step" || Name == "zero_grad")
      return block("calls '" + Name +
                   "' and so changes parameters or gradients");
    if (Parent && StringRef(qualifiedName(Parent)).starts_with("torch::optim::"))
      return block("calls '" + Name + "' on an optimizer");
    if (Parent && isModuleRecord(Parent))
      return block("calls '" + Name +
                   "' on a module, maybe the wrapped one or one sharing its "
                   "parameters");
    if (drawsRandomNumbers(Callee) && Result.Draws.empty())
      Result.Draws = Name;
    if (isTorchDecl(Callee)) {
      if (Name == "set_grad_enabled" || Name == "set_enabled")
        return block("sets the grad mode");
      if (Callee->getOverloadedOperator() == OO_Equal && Object) {
        // `t = u` rebinds the variable; `t[0] = u` writes into t.
        if (targetOf(Object).K == Target::Local &&
            isa<DeclRefExpr>(skipImplicit(Object)))
          assigns(Object);
        else
          modifiesInPlace(Object, Name);
      } else if ((torch::isInPlaceOp(Name) || StringRef(Name).contains("_out")) &&
                 Object) {
        modifiesInPlace(Object, Name);
      }
      return;
    }
    if (outermostNamespace(Callee) == "std") {
      if (Callee->getOverloadedOperator() == OO_Call)
        return block("calls a std::function, whose effects are not known");
      // A container or value the call may change (push_back, swap).
      if (Method && !Method->isConst() && Object &&
          targetOf(Object).K == Target::Local)
        Result.Assigns.insert(targetOf(Object).Var->getName());
      for (unsigned I = 0; I < Call->getNumArgs() && I < Callee->getNumParams();
           ++I) {
        QualType Param = Callee->getParamDecl(I)->getType();
        if (Param->isReferenceType() &&
            !Param.getNonReferenceType().isConstQualified() &&
            targetOf(Call->getArg(I)).K == Target::Local)
          Result.Assigns.insert(targetOf(Call->getArg(I)).Var->getName());
      }
      return;
    }
    block("calls '" + Name + "', whose effects are not known");
  }

  CrossedStatement &Result;
  DDPObjects &Objects;
};

} // namespace

void FuseFixer::index(const FunctionDecl *Function) {
  if (!Indexed.insert(Function).second)
    return;
  forEachStmt(Function->getBody(), [&](const Stmt *S) {
    const auto *Block = dyn_cast<CompoundStmt>(S);
    if (!Block)
      return;
    unsigned Index = 0;
    for (const Stmt *Child : Block->body()) {
      if (std::optional<ForwardStatement> Statement =
              asForwardStatement(Child, Objects))
        Positions[Statement->Forward.Call] = {Block, Index};
      ++Index;
    }
  });
}

FixOutcome FuseFixer::make(const Finding &F) {
  std::optional<ForwardCall> Second = Objects.matchForward(F.Second.Call);
  const WrapperRule *Rule = Second ? Second->Rule : nullptr;
  if (F.Second.Via || F.First.Via)
    return reason("a forward runs inside a called function");
  if (!Rule)
    return reason("the second call is not a forward on a known wrapper");
  if (Rule->FusedForward.empty())
    return reason("'" + Rule->Type + "' has no fused forward");
  if (F.Loop)
    return reason("the forwards are different iterations of a loop");

  index(F.Function);
  const SourceManager &SM = Context.getSourceManager();
  auto LineOf = [&](SourceLocation Loc) {
    return std::to_string(SM.getPresumedLineNumber(Loc));
  };
  auto FirstAt = Positions.find(F.First.Call);
  auto SecondAt = Positions.find(F.Second.Call);
  for (const auto &[At, Call] : {std::pair(FirstAt, F.First.Call),
                                 std::pair(SecondAt, F.Second.Call)})
    if (At == Positions.end())
      return reason("the forward at line " + LineOf(Call->getBeginLoc()) +
                    " is not a statement in a block that stores one output");
  const CompoundStmt *Block = FirstAt->second.Block;
  if (Block != SecondAt->second.Block) {
    // Name the block that holds one forward and not the other: a scope with
    // another grad mode, a branch, a nested scope.
    const CompoundStmt *Other = SecondAt->second.Block;
    bool SecondNested = SM.isBeforeInTranslationUnit(Block->getLBracLoc(),
                                                     Other->getLBracLoc()) &&
                        SM.isBeforeInTranslationUnit(Other->getRBracLoc(),
                                                     Block->getRBracLoc());
    const Expr *Inside = SecondNested ? F.Second.Call : F.First.Call;
    const Expr *Outside = SecondNested ? F.First.Call : F.Second.Call;
    return reason("the forward at line " + LineOf(Inside->getBeginLoc()) +
                  " runs inside the block opened at line " +
                  LineOf((SecondNested ? Other : Block)->getLBracLoc()) +
                  ", which the forward at line " +
                  LineOf(Outside->getBeginLoc()) + " is not in");
  }

  // Every hazard that involves a forward to fuse must lie within the fused
  // forwards: otherwise the fused forward still broadcasts over the buffers
  // of an earlier forward, or a later forward over the fused forward's. So
  // the forwards to fuse are these two and, in turn, every forward a finding
  // pairs with one of them; each must be a statement of this block.
  llvm::SmallPtrSet<const Expr *, 4> Members{F.First.Call, F.Second.Call};
  unsigned Low = std::min(FirstAt->second.Index, SecondAt->second.Index);
  unsigned High = std::max(FirstAt->second.Index, SecondAt->second.Index);
  for (bool Grew = true; Grew;) {
    Grew = false;
    for (const Finding &Other : All) {
      if (Other.Function != F.Function || Other.Object != F.Object)
        continue;
      bool FirstIn = Members.contains(Other.First.Call);
      bool SecondIn = Members.contains(Other.Second.Call);
      if (!FirstIn && !SecondIn)
        continue;
      if (Other.Loop)
        return reason("the forward at line " +
                      std::to_string(SM.getPresumedLineNumber(
                          Other.Second.Call->getBeginLoc())) +
                      " overwrites buffers of a forward in another iteration "
                      "of a loop, which fusing would not change");
      if (FirstIn && SecondIn)
        continue;
      const Site &Outside = FirstIn ? Other.Second : Other.First;
      auto OutsideAt = Positions.find(Outside.Call);
      if (Other.First.Via || Other.Second.Via || OutsideAt == Positions.end() ||
          OutsideAt->second.Block != Block)
        return reason("the forward at line " +
                      std::to_string(SM.getPresumedLineNumber(
                          Outside.Call->getBeginLoc())) +
                      " cannot join the fused forwards and would still " +
                      (FirstIn ? "overwrite the buffers they saved"
                               : "have its saved buffers overwritten by them"));
      Members.insert(Outside.Call);
      Low = std::min(Low, OutsideAt->second.Index);
      High = std::max(High, OutsideAt->second.Index);
      Grew = true;
    }
  }

  // The forwards on the object from the first to the last, and the
  // statements between them, which the forwards must move past.
  std::vector<ForwardStatement> Run;
  std::vector<CrossedStatement> Crossed;
  /// For each statement from Low to High: the index of its forward in Run,
  /// or none for a crossed statement.
  std::vector<std::optional<unsigned>> Order;
  for (unsigned I = Low; I <= High; ++I) {
    const Stmt *S = Block->body_begin()[I];
    std::optional<ForwardStatement> Statement = asForwardStatement(S, Objects);
    if (Statement && Statement->Forward.Object == F.Object) {
      Order.push_back(Run.size());
      Run.push_back(*Statement);
      continue;
    }
    Order.push_back(std::nullopt);
    CrossedStatement &Effects = Crossed.emplace_back();
    Effects.Statement = S;
    if (isa<DeclStmt>(S) || isa<Expr>(S) || isa<NullStmt>(S))
      StatementEffects(Effects, Objects).visit(S);
    else
      Effects.Barrier = "is not a declaration or an expression statement";
  }
  for (const ForwardStatement &Statement : Run) {
    if (Statement.IsDeclaration != Run.front().IsDeclaration)
      return reason("the forwards mix declarations and assignments");
    if (Statement.Statement->getBeginLoc().isMacroID() ||
        Statement.Statement->getEndLoc().isMacroID())
      return reason("a forward is in a macro expansion");
    for (const ForwardStatement &Earlier : Run) {
      if (&Earlier == &Statement)
        break;
      if (llvm::any_of(Statement.Forward.Args, [&](const Expr *Arg) {
            return mentions(Arg, Earlier.Output);
          }))
        return reason("the forward at line " +
                      std::to_string(lineOf(Statement.Statement, Context)) +
                      " takes the output of the forward at line " +
                      std::to_string(lineOf(Earlier.Statement, Context)));
    }
  }
  // A hoisted argument is evaluated before the earlier forwards run.
  for (size_t I = 1; I < Run.size(); ++I)
    for (const Expr *Arg : Run[I].Forward.Args) {
      std::string Draw = isPlain(Arg, Context) ? "" : randomDraw(Arg);
      if (Draw.empty())
        continue;
      if (std::optional<std::string> Why = whyForwardMayDraw(F.Object))
        return reason("the argument of the forward at line " +
                      std::to_string(lineOf(Run[I].Statement, Context)) +
                      " draws random numbers ('" + Draw +
                      "') and would be evaluated before the forward at line " +
                      std::to_string(lineOf(Run.front().Statement, Context)) +
                      ", which may draw too: " + *Why);
    }

  // The fused call takes the place of one forward, the anchor: the forwards
  // before it move down to it, those after it move up. Tried from the last
  // forward (nothing moves up) to the first; only the last forward of a run
  // of consecutive ones can be the anchor.
  std::optional<unsigned> Anchor;
  std::optional<Blocked> NotDown, NotUp;
  for (unsigned Candidate = Run.size(); Candidate-- > 0;) {
    auto At = llvm::find(Order, std::optional<unsigned>(Candidate));
    if (Candidate + 1 < Run.size() && std::next(At) != Order.end() &&
        std::next(At)->has_value())
      continue;
    std::optional<Blocked> Why;
    unsigned CrossedIndex = 0;
    for (auto It = Order.begin(); It != Order.end() && !Why; ++It) {
      if (It->has_value())
        continue;
      const CrossedStatement &Statement = Crossed[CrossedIndex++];
      bool Down = It < At;
      for (auto Mover = Down ? Order.begin() : std::next(It);
           Mover != (Down ? It : Order.end()) && !Why; ++Mover)
        if (Mover->has_value())
          Why = whyCannotCross(Run[**Mover], Statement, Down, F.Object);
    }
    if (!Why) {
      Anchor = Candidate;
      break;
    }
    (NotDown ? NotUp : NotDown) = Why;
  }
  if (!Anchor) {
    // Both directions blocked by the same statement for the same reason.
    if (NotUp && NotUp->Line == NotDown->Line && NotUp->What == NotDown->What &&
        !NotUp->What.empty())
      return reason("no forward can move past line " +
                    std::to_string(NotDown->Line) + ", which " + NotDown->What);
    return reason(NotDown->describe() +
                  (NotUp ? "; " + NotUp->describe() : std::string()));
  }

  auto Cached = Made.find(Run.front().Forward.Call);
  if (Cached != Made.end())
    return Cached->second;
  FixOutcome Outcome = fuse(Run, *Anchor, *Rule, F.Function);
  Made[Run.front().Forward.Call] = Outcome;
  return Outcome;
}

std::optional<std::string>
FuseFixer::whyForwardMayDraw(const ValueDecl *Object) {
  auto Found = ForwardDraws.find(Object);
  if (Found != ForwardDraws.end())
    return Found->second;
  std::optional<std::string> Why =
      Modules.whyForwardMayDraw(Objects.moduleType(Objects.construction(Object)));
  ForwardDraws[Object] = Why;
  return Why;
}

std::string Blocked::describe() const {
  std::string Move = "the forward at line " + std::to_string(ForwardLine) +
                     " cannot move " + (Down ? "down" : "up") + " past line " +
                     std::to_string(Line);
  if (!Argument.empty())
    return Move + ": its argument '" + Argument +
           "' would be evaluated before that line";
  return Move + ", which " + What;
}

std::optional<Blocked>
FuseFixer::whyCannotCross(const ForwardStatement &Forward,
                          const CrossedStatement &Statement, bool Down,
                          const ValueDecl *Object) {
  Blocked Why{lineOf(Forward.Statement, Context),
              lineOf(Statement.Statement, Context), Down};
  // Moved up, a forward reads its arguments where the fused call is: only a
  // variable or a constant reads the same there.
  if (!Down)
    for (const Expr *Arg : Forward.Forward.Args)
      if (!isa<CXXDefaultArgExpr>(Arg) && !isPlain(Arg, Context)) {
        Why.Argument = spelledText(Arg, Context).value_or("");
        return Why;
      }
  StringRef Output = Forward.Output->getName();
  if (!Statement.Barrier.empty()) {
    Why.What = Statement.Barrier;
  } else if (Statement.Uses.contains(Output) ||
             Statement.Declares.contains(Output)) {
    Why.What = "uses its output '" + Output.str() + "'";
  } else {
    for (const Expr *Arg : Forward.Forward.Args)
      for (const auto &Variable : variablesIn(Arg)) {
        StringRef Name = Variable.getKey();
        if (Why.What.empty() && Statement.Declares.contains(Name))
          Why.What = "declares its argument '" + Name.str() + "'";
        if (Why.What.empty() && Statement.Assigns.contains(Name))
          Why.What = "assigns its argument '" + Name.str() + "'";
      }
  }
  // Reordering draws changes which random numbers each one gets.
  if (Why.What.empty() && !Statement.Draws.empty())
    if (std::optional<std::string> Draws = whyForwardMayDraw(Object))
      Why.What = "draws random numbers ('" + Statement.Draws +
                 "') and the forward may draw too: " + *Draws;
  if (Why.What.empty())
    return std::nullopt;
  return Why;
}

std::string FuseFixer::freshName(const FunctionDecl *Function,
                                 llvm::StringRef Stem) {
  unsigned &Next = NextName[{Function, Stem.str()}];
  for (;;) {
    std::string Name = (Stem + "_" + llvm::Twine(++Next)).str();
    // Any identifier the translation unit spells may be in scope here.
    if (Context.Idents.find(Name) == Context.Idents.end())
      return Name;
  }
}

FixOutcome FuseFixer::fuse(llvm::ArrayRef<ForwardStatement> Run,
                           unsigned Anchor, const WrapperRule &Rule,
                           const FunctionDecl *Function) {
  const SourceManager &SM = Context.getSourceManager();
  // Every piece of the replacement is text spelled in the file; never a
  // piece of a macro's body, which Lexer::getSourceText would give as ''.
  const ForwardCall &Head = Run.front().Forward;
  std::optional<std::string> Object = spelledText(Head.ObjectExpr, Context);
  if (!Object)
    return reason(unspellable("the DDP object is named", Head.ObjectExpr,
                              Context));

  // The arguments in the order the forwards evaluated them. The fused call
  // evaluates its arguments in an unspecified order (GCC: right to left), so
  // each one that is not a plain variable or a constant is first stored in a
  // local, in the original order, where its statement was.
  struct Piece {
    SourceLocation Begin, End;
    std::vector<std::string> Lines;
  };
  std::vector<Piece> Pieces;
  std::vector<std::string> Groups;
  for (const ForwardStatement &Statement : Run) {
    Piece P;
    P.Begin = Statement.Statement->getBeginLoc();
    P.End = statementEnd(Statement, Context);
    if (P.End.isInvalid())
      return reason("the end of a forward's statement cannot be found");
    llvm::SmallVector<std::string, 2> Args;
    for (const Expr *Arg : Statement.Forward.Args) {
      if (isa<CXXDefaultArgExpr>(Arg))
        continue;
      std::optional<std::string> Text = spelledText(Arg, Context);
      if (!Text)
        return reason(unspellable("an argument of the forward is computed",
                                  Arg, Context));
      if (isPlain(Arg, Context)) {
        Args.push_back(std::move(*Text));
        continue;
      }
      std::string Name = freshName(Function, "ddpguard_input");
      P.Lines.push_back("auto " + Name + " = " + *Text + ";");
      Args.push_back(std::move(Name));
    }
    Groups.push_back(Args.size() == 1
                         ? Args.front()
                         : "std::make_tuple(" + llvm::join(Args, ", ") + ")");
    Pieces.push_back(std::move(P));
  }
  std::string Call = *Object + (Head.ThroughArrow ? "->" : ".") +
                     Rule.FusedForward + "(" + llvm::join(Groups, ", ") + ")";

  // The outputs. Assignments: std::tie. Declarations that are all plain
  // `auto`: a structured binding. Otherwise each declaration keeps its own
  // type, attributes and initialisation, taking its element of the tuple.
  std::vector<std::string> Names;
  for (const ForwardStatement &Statement : Run)
    Names.push_back(Statement.Output->getNameAsString());
  std::vector<std::string> &Fused = Pieces[Anchor].Lines;
  if (!Run.front().IsDeclaration) {
    Fused.push_back("std::tie(" + llvm::join(Names, ", ") + ") = " + Call + ";");
  } else {
    std::vector<std::string> Prefixes;
    for (const ForwardStatement &Statement : Run) {
      const auto *Var = cast<VarDecl>(Statement.Output);
      std::optional<std::string> Prefix;
      if (Var->getLocation().isFileID())
        Prefix = Lexer::getSourceText(
                     CharSourceRange::getCharRange(
                         Statement.Statement->getBeginLoc(), Var->getLocation()),
                     SM, Context.getLangOpts())
                     .rtrim()
                     .str();
      if (!Prefix || Prefix->empty())
        return reason("the declared type of '" + Var->getNameAsString() +
                      "' cannot be spelled");
      Prefixes.push_back(std::move(*Prefix));
    }
    if (llvm::all_of(Prefixes, [](const std::string &P) { return P == "auto"; })) {
      Fused.push_back("auto [" + llvm::join(Names, ", ") + "] = " + Call + ";");
    } else {
      std::string Outputs = freshName(Function, "ddpguard_outputs");
      Fused.push_back("auto " + Outputs + " = " + Call + ";");
      for (size_t I = 0; I < Run.size(); ++I) {
        std::string Element =
            "std::get<" + std::to_string(I) + ">(std::move(" + Outputs + "))";
        switch (cast<VarDecl>(Run[I].Output)->getInitStyle()) {
        case VarDecl::CallInit:
          Element = "(" + Element + ")";
          break;
        case VarDecl::ListInit:
          Element = "{" + Element + "}";
          break;
        default:
          Element = " = " + Element;
          break;
        }
        Fused.push_back(Prefixes[I] + " " + Names[I] + Element + ";");
      }
    }
  }

  // One edit per statement, so that comments and blank lines between them
  // stay: a statement becomes its hoisted arguments, the anchor's also the
  // fused call; one with nothing left is removed.
  FixOutcome Outcome;
  for (const Piece &P : Pieces) {
    if (P.Lines.empty()) {
      Outcome.Hints.push_back(
          FixItHint::CreateRemoval(removalRange(P.Begin, P.End, SM)));
      continue;
    }
    Outcome.Hints.push_back(FixItHint::CreateReplacement(
        CharSourceRange::getCharRange(P.Begin, P.End),
        llvm::join(P.Lines, "\n" + indentOf(P.Begin, SM))));
  }
  return requireFileLocations(std::move(Outcome),
                              "a forward is in a macro expansion");
}

} // namespace fix
} // namespace ddpguard
