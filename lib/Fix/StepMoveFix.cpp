//===- StepMoveFix.cpp - An optimizer step moved after the backward -------===//
//
// The step of a module's optimizer between a forward and a backward through
// it moves after that backward, where the move provably changes nothing the
// program computes: the backward accumulates into no parameter of the
// module (autograd::grad, or backward's `inputs` that do not name it), and
// no statement between them names the module or the optimizer. Otherwise
// the move would feed the backward's gradients into the step, or change the
// weights a statement sees, and the fix is withheld with the reason.
//
//===----------------------------------------------------------------------===//

#include "Fixes.h"
#include "Frontend/DDPObjects.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/ParentMapContext.h"
#include "clang/Lex/Lexer.h"

using namespace clang;
using namespace ddpguard::clangfe;

namespace ddpguard {
namespace fix {

namespace {

/// The statement of Block that holds E, if E's nearest block is Block's.
const Stmt *statementIn(const Expr *E, const CompoundStmt *&Block,
                        ASTContext &Context) {
  const Stmt *S = E;
  while (true) {
    auto Parents = Context.getParents(*S);
    if (Parents.size() != 1)
      return nullptr;
    if (const auto *Compound = Parents[0].get<CompoundStmt>()) {
      Block = Compound;
      return S;
    }
    // `auto grads = torch::autograd::grad(...);`: the declaration's statement.
    if (const auto *Var = Parents[0].get<VarDecl>()) {
      auto Declared = Context.getParents(*Var);
      if (Declared.size() != 1 || !Declared[0].get<DeclStmt>())
        return nullptr;
      S = Declared[0].get<DeclStmt>();
      continue;
    }
    const Stmt *Parent = Parents[0].get<Stmt>();
    if (!Parent || !isa<Expr>(Parent))
      return nullptr;
    S = Parent;
  }
}

bool names(const Stmt *S, const ValueDecl *Decl) {
  bool Found = false;
  forEachStmt(S, [&](const Stmt *Child) {
    if (const auto *Ref = dyn_cast<DeclRefExpr>(Child))
      Found |= Ref->getDecl() == Decl;
    else if (const auto *Member = dyn_cast<MemberExpr>(Child))
      Found |= Member->getMemberDecl() == Decl;
  });
  return Found;
}

/// The backward's `inputs` argument, when it restricts what it accumulates
/// into; null when it accumulates into every leaf it reaches. Grad is set
/// for autograd::grad, which accumulates into none.
const Expr *inputsOf(const CallExpr *Call, bool &Grad) {
  Grad = false;
  const FunctionDecl *Callee = Call->getDirectCallee();
  if (!Callee)
    return nullptr;
  unsigned Index;
  if (isa<CXXMemberCallExpr>(Call)) {
    Index = 3; // Tensor::backward(gradient, retain_graph, create_graph, inputs)
  } else {
    std::string Name = Callee->getQualifiedNameAsString();
    if (Name == "torch::autograd::grad") {
      Grad = true;
      return nullptr;
    }
    Index = 4; // autograd::backward(tensors, grads, retain, create, inputs)
  }
  if (Index >= Call->getNumArgs() ||
      isa<CXXDefaultArgExpr>(Call->getArg(Index)))
    return nullptr;
  return Call->getArg(Index);
}

/// Just after the statement's semicolon.
SourceLocation afterStatement(const Stmt *S, const SourceManager &SM,
                              const LangOptions &LangOpts) {
  if (isa<DeclStmt>(S)) // Its range ends at the semicolon.
    return Lexer::getLocForEndOfToken(S->getEndLoc(), 0, SM, LangOpts);
  return Lexer::findLocationAfterToken(
      S->getEndLoc(), tok::semi, SM, LangOpts,
      /*SkipTrailingWhitespaceAndNewLine=*/false);
}

} // namespace

FixOutcome makeStepMoveFix(const WriteFinding &F, ASTContext &Context) {
  const SourceManager &SM = Context.getSourceManager();
  const LangOptions &LangOpts = Context.getLangOpts();
  unsigned BackwardLine =
      SM.getPresumedLineNumber(F.Backward.Call->getExprLoc());
  std::string Module = F.Module->getNameAsString();
  std::string Line = std::to_string(BackwardLine);
  bool Grad = false;
  const Expr *Inputs = F.Backward.Via
                           ? nullptr
                           : inputsOf(cast<CallExpr>(F.Backward.Call), Grad);
  if (!Grad && (!Inputs || names(Inputs, F.Module)))
    return withheldFix("moving the step after the backward at line " + Line +
                       " would make it use that backward's gradients too, and "
                       "recomputing the forward after the step would change "
                       "what the later loss sees; both change what training "
                       "computes");
  if (F.Loop)
    return withheldFix("the backward at line " + Line +
                       " runs in the next iteration of the loop: the step "
                       "cannot move after it without changing how often it "
                       "runs");
  const CompoundStmt *StepBlock = nullptr, *BackwardBlock = nullptr;
  const Stmt *Step = statementIn(F.Write.Call, StepBlock, Context);
  const Stmt *Backward =
      statementIn(cast<Expr>(F.Backward.Call), BackwardBlock, Context);
  if (!Step || !Backward || StepBlock != BackwardBlock ||
      cast<Expr>(Step)->IgnoreImplicit() != F.Write.Call)
    return withheldFix("the step is not a statement of the block of the "
                       "backward at line " +
                       Line + ", so it cannot move there");
  // What runs between them must not see the module's weights or its
  // optimizer: after the move it would see those before the step.
  bool Between = false;
  for (const Stmt *S : StepBlock->body()) {
    if (S == Backward)
      break;
    if (Between && (names(S, F.Module) || names(S, F.Opt->Decl)))
      return withheldFix(
          "the statement at line " +
          std::to_string(SM.getPresumedLineNumber(S->getBeginLoc())) +
          " uses '" + Module +
          "' or its optimizer between the step and the "
          "backward at line " +
          Line +
          ": moved, it would see the weights "
          "before the step");
    Between |= S == Step;
  }

  // Move the step's whole line after the backward's statement.
  SourceLocation Begin = Step->getBeginLoc();
  SourceLocation LineStart = SM.translateLineCol(
      SM.getFileID(Begin), SM.getPresumedLineNumber(Begin), 1);
  StringRef Indent = Lexer::getIndentationForLine(Begin, SM);
  SourceLocation AfterStep = afterStatement(Step, SM, LangOpts);
  SourceLocation AfterBackward = afterStatement(Backward, SM, LangOpts);
  if (AfterStep.isInvalid() || AfterBackward.isInvalid() ||
      !AfterStep.isFileID() || !AfterBackward.isFileID())
    return withheldFix("the step or the backward is inside a macro expansion, "
                       "which a fix cannot edit");
  // The step's line goes whole, with the newline before it and a trailing
  // comment: it must hold nothing else.
  StringRef Rest = SM.getCharacterData(AfterStep);
  size_t LineEnd = Rest.find('\n');
  StringRef Trailing =
      LineEnd == StringRef::npos ? "" : Rest.take_front(LineEnd).trim();
  if (SM.getDecomposedLoc(LineStart).second + Indent.size() !=
          SM.getDecomposedLoc(Begin).second ||
      LineEnd == StringRef::npos ||
      !(Trailing.empty() || Trailing.starts_with("//")))
    return withheldFix(
        "the step shares its line with other code; move it after "
        "the backward at line " +
        Line + " by hand");
  StringRef Text =
      Lexer::getSourceText(CharSourceRange::getCharRange(
                               Begin, AfterStep.getLocWithOffset(LineEnd)),
                           SM, LangOpts)
          .rtrim();
  FixOutcome Outcome;
  Outcome.Hints.push_back(FixItHint::CreateRemoval(
      CharSourceRange::getCharRange(LineStart.getLocWithOffset(-1),
                                    AfterStep.getLocWithOffset(LineEnd))));
  Outcome.Hints.push_back(FixItHint::CreateInsertion(
      AfterBackward,
      ("\n" + Lexer::getIndentationForLine(Backward->getBeginLoc(), SM) + Text)
          .str()));
  return Outcome;
}

} // namespace fix
} // namespace ddpguard
