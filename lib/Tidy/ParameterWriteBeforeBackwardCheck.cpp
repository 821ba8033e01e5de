//===- ParameterWriteBeforeBackwardCheck.cpp ------------------------------===//

#include "ParameterWriteBeforeBackwardCheck.h"
#include "clang/AST/ASTContext.h"

using namespace clang;
using namespace ddpguard::clangfe;

namespace ddpguard {
namespace tidy {

std::vector<WriteFinding>
ParameterWriteBeforeBackwardCheck::findings(TranslationUnitAnalysis &Analysis) {
  return Analysis.runParameterWrites();
}

void ParameterWriteBeforeBackwardCheck::report(const WriteFinding &F) {
  const ParameterWrite &Write = *F.InPlace;
  std::string Module = F.Module->getNameAsString();
  SourceLocation At = Write.Call->getExprLoc();
  unsigned BackwardLine = lineOf(F.Backward.Call->getExprLoc());
  warning(At,
       "'%0' writes %select{a parameter|the parameters}1 of '%2' in place, "
       "which the forward at line %3 saved for backward; the backward at "
       "line %4 through that forward will fail")
      << Write.Operation << Write.WholeList << Module
      << lineOf(F.Forward.Call->getBeginLoc()) << BackwardLine;
  StringRef Tensor = sourceText(Write.Tensor->getSourceRange(), *Context);
  note(Write.Tensor->getBeginLoc(),
       "'%0' is %select{one of the parameters|the list of the parameters}1 "
       "of '%2'; an in-place write bumps %select{its version counter|their "
       "version counters}1 in any grad mode, NoGradGuard included")
      << (Tensor.empty() ? StringRef("the tensor") : Tensor) << Write.WholeList
      << Module;
  noteForwardAndBackward(F);
  note(At,
       "no fix is offered: moving the write after the backward at line %0, "
       "or recomputing the forward after the write, changes which weights "
       "the later backward and loss see; both change what training computes",
       NoteKind::NoFix)
      << BackwardLine;
  noteJudgedBy(At);
}

} // namespace tidy
} // namespace ddpguard
