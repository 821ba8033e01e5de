//===- SavedOperands.cpp --------------------------------------------------===//

#include "SavedOperands.h"
#include "SavedBuffers.h"
#include "clang/AST/DeclCXX.h"
#include "clang/AST/ExprCXX.h"

using namespace clang;
using llvm::StringRef;

namespace ddpguard {
namespace clangfe {

using Form = SavedOpForm;

std::string operatorName(const FunctionDecl *Callee) {
  if (OverloadedOperatorKind OO = Callee->getOverloadedOperator())
    return std::string("operator") + getOperatorSpelling(OO);
  if (const IdentifierInfo *Id = Callee->getIdentifier())
    return Id->getName().str();
  return "";
}

bool isFunctional(const Decl *D) {
  for (const DeclContext *DC = D->getDeclContext(); DC; DC = DC->getParent())
    if (const auto *NS = dyn_cast<NamespaceDecl>(DC))
      if (NS->getIdentifier() && NS->getName() == "functional")
        return true;
  return false;
}

std::optional<TorchOpCall> matchTorchOp(const CallExpr *Call) {
  const auto *Callee = dyn_cast_or_null<FunctionDecl>(Call->getCalleeDecl());
  if (!Callee || !isTorchDecl(Callee))
    return std::nullopt;
  TorchOpCall Match;
  Match.Call = Call;
  Match.Name = operatorName(Callee);
  if (const auto *Member = dyn_cast<CXXMemberCallExpr>(Call)) {
    Match.Called = Form::Method;
    Match.Operands.push_back(Member->getImplicitObjectArgument());
  } else if (isa<CXXOperatorCallExpr>(Call)) {
    Match.Called = Form::Any;
  } else if (isFunctional(Callee)) {
    Match.Called = Form::Functional;
  }
  Match.Operands.append(Call->arg_begin(), Call->arg_end());
  Match.Op = findSavedOp(Match.Name, Match.Called);
  return Match;
}

} // namespace clangfe
} // namespace ddpguard
