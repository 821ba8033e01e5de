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
namespace {

/// One statement that stores one forward's output: `auto o = D(x);` or
/// `o = D(x);`.
struct ForwardStatement {
  const Stmt *Statement = nullptr;
  const ValueDecl *Output = nullptr;
  bool IsDeclaration = false;
  ForwardCall Forward;
};

std::optional<ForwardStatement> asForwardStatement(const Stmt *S,
                                                   DDPObjects &Objects) {
  ForwardStatement Result;
  Result.Statement = S;
  const Expr *Value = nullptr;
  if (const auto *Decl = dyn_cast<DeclStmt>(S)) {
    const auto *Var =
        Decl->isSingleDecl() ? dyn_cast<VarDecl>(Decl->getSingleDecl()) : nullptr;
    if (!Var || !Var->getInit() || Var->getType()->isReferenceType() ||
        isa<DecompositionDecl>(Var))
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
  std::optional<ForwardCall> Forward = Objects.matchForward(skipImplicit(Value));
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

/// The fused call's argument for one forward, or why it cannot be written.
llvm::Expected<std::string> argumentsText(const ForwardCall &Call,
                                          const ASTContext &Context) {
  llvm::SmallVector<std::string, 2> Args;
  for (const Expr *Arg : Call.Args) {
    if (isa<CXXDefaultArgExpr>(Arg))
      continue;
    std::optional<std::string> Text = spelledText(Arg, Context);
    if (!Text)
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          unspellable("an argument of the forward is computed", Arg, Context));
    Args.push_back(std::move(*Text));
  }
  if (Args.size() == 1)
    return Args.front();
  return "std::make_tuple(" + llvm::join(Args, ", ") + ")";
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

  // Every piece of the replacement is text spelled in the file; never a
  // piece of a macro's body, which Lexer::getSourceText would give as ''.
  const ForwardCall &Head = Run.front().Forward;
  std::string Names, Args;
  for (const ForwardStatement &Statement : Run) {
    if (!Names.empty()) {
      Names += ", ";
      Args += ", ";
    }
    Names += Statement.Output->getNameAsString();
    llvm::Expected<std::string> Text =
        argumentsText(Statement.Forward, Context);
    if (!Text)
      return reason(llvm::toString(Text.takeError()));
    Args += *Text;
  }
  std::optional<std::string> Object = spelledText(Head.ObjectExpr, Context);
  if (!Object)
    return reason(unspellable("the DDP object is named", Head.ObjectExpr,
                              Context));
  std::string Call = *Object + (Head.ThroughArrow ? "->" : ".") +
                     Rule->FusedForward + "(" + Args + ")";

  FixOutcome Outcome;
  SourceLocation Begin = Run.front().Statement->getBeginLoc();
  SourceLocation End = Run.back().Statement->getEndLoc();
  if (Run.front().IsDeclaration) {
    Outcome.Hints.push_back(FixItHint::CreateReplacement(
        CharSourceRange::getTokenRange(Begin, End),
        "auto [" + Names + "] = " + Call + ";"));
  } else {
    Outcome.Hints.push_back(FixItHint::CreateReplacement(
        CharSourceRange::getTokenRange(Begin, End),
        "std::tie(" + Names + ") = " + Call));
  }
  return requireFileLocations(std::move(Outcome),
                              "a forward is in a macro expansion");
}

} // namespace fix
} // namespace ddpguard
