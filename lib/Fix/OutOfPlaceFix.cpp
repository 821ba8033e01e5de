//===- OutOfPlaceFix.cpp - In-place writes on saved values, out of place --===//
//
// `gate.mul_(2);` becomes `gate = gate.mul(2);` and `h += y;` becomes
// `h = h + y;`: the variable holds the same values afterwards, and the tensor
// the operation saved keeps its own. That keeps the meaning only where no
// other tensor shares the variable's storage when it is written (a view, a
// handle copy, the caller's tensor), since that one would no longer see the
// write; then the fix is withheld and the note says why.
//
//===----------------------------------------------------------------------===//

#include "Fixes.h"
#include "Frontend/DDPObjects.h"
#include "Frontend/SavedBuffers.h"
#include "Frontend/SavedOperands.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/ParentMapContext.h"
#include "clang/Lex/Lexer.h"

using namespace clang;
using namespace ddpguard::clangfe;

namespace ddpguard {
namespace fix {

namespace {

const Expr *skipTransparent(const Expr *E) {
  while (true) {
    E = E->IgnoreImplicit()->IgnoreParens();
    if (const auto *Construct = dyn_cast<CXXConstructExpr>(E))
      if (Construct->getNumArgs() == 1 &&
          isTensor(Construct->getArg(0)->getType())) {
        E = Construct->getArg(0);
        continue;
      }
    return E;
  }
}

/// The nearest enclosing node that is not an implicit wrapper of E.
const Stmt *enclosing(const Stmt *S, ASTContext &Context) {
  while (true) {
    auto Parents = Context.getParents(*S);
    if (Parents.size() != 1)
      return nullptr;
    const Stmt *Parent = Parents[0].get<Stmt>();
    if (!Parent)
      return nullptr;
    if (isa<ImplicitCastExpr, MaterializeTemporaryExpr, CXXBindTemporaryExpr,
            ExprWithCleanups, ParenExpr>(Parent) ||
        (isa<CXXConstructExpr>(Parent) &&
         cast<CXXConstructExpr>(Parent)->getNumArgs() == 1)) {
      S = Parent;
      continue;
    }
    return Parent;
  }
}

/// A use of the variable that hands on no handle to its storage: an operand
/// of an operation that makes a new tensor, or a module's input.
bool makesNewTensor(const DeclRefExpr *Use, ASTContext &Context) {
  const auto *Call = dyn_cast_or_null<CallExpr>(enclosing(Use, Context));
  if (!Call)
    return false;
  if (std::optional<TorchOpCall> Op = matchTorchOp(Call))
    return Op->Op && Op->Op->Result != SavedOpResult::View;
  const auto *Method = dyn_cast_or_null<CXXMethodDecl>(Call->getDirectCallee());
  if (!Method || !Method->getIdentifier())
    return Method && Method->getOverloadedOperator() == OO_Call &&
           isModuleRecord(Method->getParent());
  return Method->getName() == "forward" && isModuleRecord(Method->getParent());
}

/// The tensor method named Name whose parameters are InPlace's.
bool hasOutOfPlaceTwin(const CXXMethodDecl *InPlace, StringRef Name) {
  const CXXRecordDecl *Record = InPlace->getParent();
  auto Lookup = Record->lookup(
      DeclarationName(&InPlace->getASTContext().Idents.get(Name)));
  for (const NamedDecl *Found : Lookup) {
    const auto *Method = dyn_cast<CXXMethodDecl>(Found);
    if (!Method || Method->getNumParams() != InPlace->getNumParams())
      continue;
    bool Same = true;
    for (unsigned I = 0; I < Method->getNumParams(); ++I)
      Same &= Method->getParamDecl(I)->getType().getCanonicalType() ==
              InPlace->getParamDecl(I)->getType().getCanonicalType();
    if (Same)
      return true;
  }
  return false;
}

} // namespace

FixOutcome makeOutOfPlaceFix(const WriteFinding &F, ASTContext &Context) {
  const TensorWrite &Write = *F.OnValue;
  const SourceManager &SM = Context.getSourceManager();
  const auto *Assign = dyn_cast<CXXOperatorCallExpr>(Write.Call);
  if (!Assign && !isa<CXXMemberCallExpr>(Write.Call))
    return withheldFix("no out-of-place spelling of '" + Write.Operation +
                       "' is offered");
  if (Assign && Assign->getOperator() == OO_Equal)
    return withheldFix(
        "'" + Write.Operation + "' writes part of '" +
        sourceText(Write.Tensor->getSourceRange(), Context).str() +
        "': no out-of-place spelling of it is offered; build the "
        "new values in a new tensor (torch::where, index_put)");
  const auto *Ref = dyn_cast<DeclRefExpr>(skipTransparent(Write.Tensor));
  const auto *Var = Ref ? dyn_cast<VarDecl>(Ref->getDecl()) : nullptr;
  std::string Written =
      sourceText(Write.Tensor->getSourceRange(), Context).str();
  if (!Var || !Var->isLocalVarDecl() || Var->getType()->isReferenceType() ||
      !isTensor(Var->getType()))
    return withheldFix(
        "'" + Written +
        "' is not a tensor variable of this function: written out "
        "of place, the tensor it names (a view, a parameter, a "
        "member) would keep its old values");
  std::string Name = Var->getName().str();
  if (const Expr *Init = Var->getInit()) {
    const Expr *Made = skipTransparent(Init);
    std::optional<TorchOpCall> Op;
    if (const auto *Call = dyn_cast<CallExpr>(Made))
      Op = matchTorchOp(Call);
    if (isa<DeclRefExpr, MemberExpr>(Made) ||
        (Op && Op->Op && Op->Op->Result == SavedOpResult::View))
      return withheldFix(
          "'" + Name +
          "' shares its storage with the tensor it "
          "was made from at line " +
          std::to_string(SM.getPresumedLineNumber(Init->getBeginLoc())) +
          ": written out of place, that tensor would keep its "
          "old values");
  }
  if (!isa_and_nonnull<CompoundStmt>(enclosing(Write.Call, Context)))
    return withheldFix(
        "the value of '" + Write.Operation +
        "' is used: written out of place, that use would change");

  // A handle to the storage taken before the write would no longer see it.
  // Only the variable's scope can use it: walking that, not the function,
  // keeps many findings in one long function linear (measured: the
  // function walk took a quarter of a 5,000-block function's check).
  const Stmt *Scope = F.Function->getBody();
  auto Declared = Context.getParents(*Var);
  if (Declared.size() == 1)
    if (const auto *Statement = Declared[0].get<DeclStmt>()) {
      auto Enclosing = Context.getParents(*Statement);
      if (Enclosing.size() == 1 && Enclosing[0].get<CompoundStmt>())
        Scope = Enclosing[0].get<CompoundStmt>();
    }
  SourceLocation WriteLoc = Write.Call->getBeginLoc();
  std::optional<unsigned> SharedAt;
  forEachStmt(Scope, [&](const Stmt *S) {
    const auto *Use = dyn_cast<DeclRefExpr>(S);
    if (SharedAt || !Use || Use->getDecl() != Var || Use == Ref ||
        !SM.isBeforeInTranslationUnit(Use->getBeginLoc(), WriteLoc))
      return;
    if (!makesNewTensor(Use, Context))
      SharedAt = SM.getPresumedLineNumber(Use->getBeginLoc());
  });
  if (SharedAt)
    return withheldFix("'" + Name +
                       "' may share its storage with another tensor "
                       "at line " +
                       std::to_string(*SharedAt) +
                       ": written out of place, that tensor would keep its old "
                       "values");

  FixOutcome Outcome;
  if (const auto *Member = dyn_cast<CXXMemberCallExpr>(Write.Call)) {
    const CXXMethodDecl *Method = Member->getMethodDecl();
    StringRef OutOfPlace = StringRef(Write.Operation).drop_back();
    if (!hasOutOfPlaceTwin(Method, OutOfPlace))
      return withheldFix("at::Tensor has no '" + OutOfPlace.str() +
                         "' that takes the arguments of '" + Write.Operation +
                         "'");
    const auto *Callee = cast<MemberExpr>(Member->getCallee()->IgnoreParens());
    Outcome.Hints.push_back(
        FixItHint::CreateInsertion(Write.Tensor->getBeginLoc(), Name + " = "));
    Outcome.Hints.push_back(FixItHint::CreateReplacement(
        CharSourceRange::getTokenRange(Callee->getMemberLoc()), OutOfPlace));
  } else {
    const auto *Op = cast<CXXOperatorCallExpr>(Write.Call);
    // `h += y` → `h = h + (y)`; parentheses only where y is not one term.
    StringRef Spelling = getOperatorSpelling(Op->getOperator());
    const Expr *Operand = Op->getArg(1)->IgnoreImplicit();
    const auto *OperandOp = dyn_cast<CXXOperatorCallExpr>(Operand);
    bool Term = isa<DeclRefExpr, CallExpr, ParenExpr, MemberExpr,
                    IntegerLiteral, FloatingLiteral>(Operand) &&
                (!OperandOp || OperandOp->getOperator() == OO_Call ||
                 OperandOp->getOperator() == OO_Subscript);
    Outcome.Hints.push_back(FixItHint::CreateReplacement(
        CharSourceRange::getTokenRange(Op->getOperatorLoc()),
        "= " + Name + " " + Spelling.drop_back().str()));
    if (!Term) {
      Outcome.Hints.push_back(
          FixItHint::CreateInsertion(Operand->getBeginLoc(), "("));
      Outcome.Hints.push_back(FixItHint::CreateInsertion(
          Lexer::getLocForEndOfToken(Operand->getEndLoc(), 0, SM,
                                     Context.getLangOpts()),
          ")"));
    }
  }
  return requireFileLocations(
      std::move(Outcome),
      "the write is inside a macro expansion, which a fix cannot edit");
}

} // namespace fix
} // namespace ddpguard
