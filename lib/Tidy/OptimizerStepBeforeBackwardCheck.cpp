//===- OptimizerStepBeforeBackwardCheck.cpp -------------------------------===//

#include "OptimizerStepBeforeBackwardCheck.h"
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
  diag(Step,
       "step of '%0' writes the parameters of '%1' in place, which the "
       "forward at line %2 saved for backward; the backward at line %3 "
       "through that forward will fail")
      << Optimizer << F.Module->getNameAsString()
      << lineOf(F.Forward.Call->getBeginLoc()) << BackwardLine;
  noteForwardAndBackward(F);
  if (F.Opt->Assumed)
    diag(Step,
         "assuming that a step of '%0' bumps the version counters of the "
         "parameters it updates: the type is not among the measured "
         "optimizers (Adam, AdamW, RMSprop, Adagrad and LBFGS do; SGD does "
         "not)",
         DiagnosticIDs::Note)
        << F.Opt->Type;
  diag(Step,
       "no fix is offered: moving the step after the backward at line %0 "
       "would make it use that backward's gradients too, and recomputing the "
       "forward after the step would change what the later loss sees; both "
       "change what training computes",
       DiagnosticIDs::Note)
      << BackwardLine;
  noteJudgedBy(Step);
}

} // namespace tidy
} // namespace ddpguard
