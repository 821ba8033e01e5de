//===- FuseFix.cpp - Consecutive forwards into one fused forward ----------===//

#include "Fixes.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/Stmt.h"
#include "clang/Lex/Lexer.h"
#include "llvm/ADT/StringExtras.h"

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

  // The run of consecutive forward statements on the object that holds both
  // calls: from the first forward's statement onwards.
  index(F.Function);
  std::vector<ForwardStatement> Run;
  auto FirstAt = Positions.find(F.First.Call);
  auto SecondAt = Positions.find(F.Second.Call);
  if (FirstAt != Positions.end() && SecondAt != Positions.end() &&
      FirstAt->second.Block == SecondAt->second.Block) {
    auto Body = FirstAt->second.Block->body();
    for (auto It = Body.begin() + FirstAt->second.Index; It != Body.end(); ++It) {
      std::optional<ForwardStatement> Statement = asForwardStatement(*It, Objects);
      bool Continues =
          Statement && Statement->Forward.Object == F.Object &&
          (Run.empty() ||
           (Statement->IsDeclaration == Run.front().IsDeclaration &&
            llvm::none_of(Run, [&](const ForwardStatement &Earlier) {
              return llvm::any_of(Statement->Forward.Args, [&](const Expr *Arg) {
                return mentions(Arg, Earlier.Output);
              });
            })));
      if (!Continues)
        break;
      Run.push_back(*Statement);
    }
    if (llvm::none_of(Run, [&](const ForwardStatement &Statement) {
          return Statement.Forward.Call == F.Second.Call;
        }))
      Run.clear();
  }
  if (Run.empty())
    return reason("the forwards are not consecutive statements in one block "
                  "that each store one output");
  for (const ForwardStatement &Statement : Run)
    if (Statement.Statement->getBeginLoc().isMacroID() ||
        Statement.Statement->getEndLoc().isMacroID())
      return reason("a forward is in a macro expansion");

  // Every hazard that involves a forward of the run must lie within it:
  // otherwise the fused forward still broadcasts over the buffers of an
  // earlier forward, or a later forward over the fused forward's.
  auto InRun = [&](const Expr *Call) {
    return llvm::any_of(Run, [&](const ForwardStatement &Statement) {
      return Statement.Forward.Call == Call;
    });
  };
  const SourceManager &SM = Context.getSourceManager();
  for (const Finding &Other : All) {
    if (Other.Function != F.Function || Other.Object != F.Object)
      continue;
    bool FirstIn = InRun(Other.First.Call), SecondIn = InRun(Other.Second.Call);
    if (!FirstIn && !SecondIn)
      continue;
    if (FirstIn && SecondIn && !Other.Loop)
      continue;
    if (Other.Loop)
      return reason("the forward at line " +
                    std::to_string(SM.getPresumedLineNumber(
                        Other.Second.Call->getBeginLoc())) +
                    " overwrites buffers of a forward in another iteration "
                    "of a loop, which fusing would not change");
    const Site &Outside = FirstIn ? Other.Second : Other.First;
    return reason("the forward at line " +
                  std::to_string(SM.getPresumedLineNumber(
                      Outside.Call->getBeginLoc())) +
                  " cannot join the fused forwards and would still " +
                  (FirstIn ? "overwrite the buffers they saved"
                           : "have its saved buffers overwritten by them"));
  }

  auto Cached = Made.find(Run.front().Forward.Call);
  if (Cached != Made.end())
    return Cached->second;
  FixOutcome Outcome = fuse(Run, *Rule, F.Function);
  Made[Run.front().Forward.Call] = Outcome;
  return Outcome;
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
                           const WrapperRule &Rule,
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
  std::vector<std::string> &Last = Pieces.back().Lines;
  if (!Run.front().IsDeclaration) {
    Last.push_back("std::tie(" + llvm::join(Names, ", ") + ") = " + Call + ";");
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
      Last.push_back("auto [" + llvm::join(Names, ", ") + "] = " + Call + ";");
    } else {
      std::string Outputs = freshName(Function, "ddpguard_outputs");
      Last.push_back("auto " + Outputs + " = " + Call + ";");
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
        Last.push_back(Prefixes[I] + " " + Names[I] + Element + ";");
      }
    }
  }

  // One edit per statement, so that comments and blank lines between them
  // stay: a statement becomes its hoisted arguments, the last one also the
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
