//===- OptimizerStepBeforeBackward.cpp ------------------------------------===//
//
// optimizer-step-before-backward: CheckResult's Steps, as the CLI's findings.
//
//===----------------------------------------------------------------------===//

#include "PythonCheck.h"

using namespace llvm;
using clang::tidy::ClangTidyError;

namespace ddpguard {

void python_checks::renderOptimizerStepBeforeBackward(
    const PythonCheckContext &C) {
  StringRef Check = checks::OptimizerStepBeforeBackward;
  const std::string &File = C.File;
  const python::CheckResult &Result = C.Result;
  for (const python::StepFinding &F : Result.Steps) {
    if (!reported(C, Check, F.Step.Offset))
      continue;
    Finding E(ClangTidyError(Check, ClangTidyError::Warning, "", false));
    E.Message = message(
        "step of '" + F.Optimizer + "' writes the parameters of '" +
            F.Module + "' in place, which the forward at line " +
            std::to_string(F.Forward.Line) +
            " saved for backward; the backward at line " +
            std::to_string(F.Backward.Line) +
            " through that forward will fail",
        File, F.Step.Offset);
    auto Note = [&](const std::string &Message, const python::Position &At,
                    NoteKind Kind = NoteKind::Place) {
      E.addNote(message(Message, File, At.Offset), Kind);
    };
    Note("the forward that saved the parameters of '" + F.Module + "'",
         F.Forward);
    Note("the backward that fails", F.Backward);
    if (F.Assumed)
      Note("assuming that a step of '" + F.OptimizerClass +
               "' bumps the version counters of the parameters it updates, "
               "as every torch.optim step does unless fused=True",
           F.Step, NoteKind::Assumption);
    Note("no fix is offered: moving the step after the backward at line " +
             std::to_string(F.Backward.Line) +
             " would make it use that backward's gradients too, and "
             "recomputing the forward after the step would change what the "
             "later loss sees; both change what training computes",
         F.Step, NoteKind::NoFix);
    Note("on every supported torch: torch.optim steps bump the version "
         "counters of the parameters they update unless fused=True "
         "(measured on 2.11.0 and 2.15.0)",
         F.Step, NoteKind::EveryTorch);
    C.Findings.push_back(std::move(E));
  }
}

} // namespace ddpguard
