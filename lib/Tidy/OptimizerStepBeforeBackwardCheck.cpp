//===- OptimizerStepBeforeBackwardCheck.cpp -------------------------------===//

#include "OptimizerStepBeforeBackwardCheck.h"
#include "Fix/Fixes.h"
#include "clang/AST/ASTContext.h"

using namespace clang;
using namespace ddpguard::clangfe;

namespace ddpguard {
namespace tidy {

std::vector<WriteFinding>
OptimizerStepBeforeBackwardCheck::findings(TranslationUnitAnalysis &Analysis) {
  return Analysis.runSteps();
}

void OptimizerStepBeforeBackwardCheck::report(const WriteFinding &F) {
  std::string Optimizer = F.Opt->Decl->getNameAsString();
  SourceLocation Step = F.Write.Call->getBeginLoc();
  unsigned BackwardLine = lineOf(F.Backward.Call->getExprLoc());
  fix::FixOutcome Fix = fix::makeStepMoveFix(F, *Context);
  {
    auto Warning =
        warning(Step,
             "step of '%0' writes the parameters of '%1' in place, which the "
             "forward at line %2 saved for backward; the backward at line %3 "
             "through that forward will fail");
    Warning << Optimizer << F.Module->getNameAsString()
            << lineOf(F.Forward.Call->getBeginLoc()) << BackwardLine;
    for (const FixItHint &Hint : Fix.Hints)
      Warning << Hint;
  }
  if (Fix.applies())
    recordFix(FixApplicability::Safe, "Move the step after the backward");
  noteForwardAndBackward(F);
  if (F.Opt->Assumed)
    note(Step,
         "assuming that a step of '%0' bumps the version counters of the "
         "parameters it updates: the type is not among the measured "
         "optimizers (Adam, AdamW, RMSprop, Adagrad and LBFGS do; SGD does "
         "not)",
         NoteKind::Assumption)
        << F.Opt->Type;
  if (Fix.applies())
    note(Step,
         "the fix moves the step after the backward at line %0: that backward "
         "accumulates into no parameter of '%1' and nothing between them uses "
         "'%1' or its optimizer, so the step and the backward compute what "
         "they did",
         NoteKind::FixEffect)
        << BackwardLine << F.Module->getNameAsString();
  else
    note(Step, "no fix is offered: %0", NoteKind::NoFix) << Fix.Reason;
  noteJudgedBy(Step);
}

} // namespace tidy
} // namespace ddpguard
