//===- SavedOperands.cpp --------------------------------------------------===//

#include "SavedOperands.h"
#include "SavedBuffers.h"
#include "clang/AST/DeclCXX.h"
#include "clang/AST/ExprCXX.h"

using namespace clang;
using llvm::StringRef;

namespace ddpguard {
namespace clangfe {

namespace {
using Form = SavedOp::Form;
using Result = SavedOp::Result;

const SavedOp SavedOps[] = {
#define SAVED_OP(Name, F, R, Saves) {Name, Form::F, Result::R, Saves},
#include "SavedOperands.def"
};
} // namespace

const SavedOp *findSavedOp(StringRef Name, Form Called) {
  const SavedOp *AnyForm = nullptr;
  for (const SavedOp &Op : SavedOps) {
    if (Op.Name != Name)
      continue;
    if (Op.OpForm == Called)
      return &Op;
    if (Op.OpForm == Form::Any && !AnyForm)
      AnyForm = &Op;
  }
  return AnyForm;
}

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

llvm::SmallVector<SaveRule, 2> saveRules(const SavedOp &Op) {
  llvm::SmallVector<StringRef, 4> Texts;
  Op.Saves.split(Texts, ' ', -1, /*KeepEmpty=*/false);
  llvm::SmallVector<SaveRule, 2> Rules;
  for (StringRef Text : Texts) {
    SaveRule Rule;
    if (Text[0] != 'r')
      Rule.Operand = Text[0] - '0';
    for (char Trigger : Text.drop_front(2))
      Rule.Triggers.push_back(Trigger - '0');
    Rules.push_back(std::move(Rule));
  }
  return Rules;
}

} // namespace clangfe
} // namespace ddpguard
