//===- InPlaceWriteBeforeBackward.cpp -------------------------------------===//
//
// inplace-write-before-backward: CheckResult's ValueWrites, as the CLI's
// findings.
//
//===----------------------------------------------------------------------===//

#include "PythonCheck.h"

using namespace llvm;
using clang::tidy::ClangTidyError;

namespace ddpguard {

void python_checks::renderInPlaceWriteBeforeBackward(
    const PythonCheckContext &C) {
  StringRef Check = checks::InPlaceWriteBeforeBackward;
  const std::string &File = C.File;
  const python::CheckResult &Result = C.Result;
  for (const python::ValueWriteFinding &F : Result.ValueWrites) {
    if (!reported(C, Check, F.Write.Offset))
      continue;
    Finding E(ClangTidyError(Check, ClangTidyError::Warning, "", false));
    std::string Saver = "'" + F.Saver + "' at line " +
                        std::to_string(F.Saved.Line);
    std::string Failing =
        !F.CarriedState.empty()
            ? " in the previous call: this forward returns '" + F.Tensor +
                  "' and gets it back as '" + F.CarriedState +
                  "'; a backward through the results of both calls will "
                  "fail"
        : F.ThroughResult
            ? std::string("; a backward through the result of this forward "
                          "will fail")
            : "; the backward at line " + std::to_string(F.Backward.Line) +
                  " through it will fail";
    E.Message = message("'" + F.Operation + "' writes '" + F.Tensor +
                            "' in place, which " + Saver +
                            " saved for backward" + Failing,
                        File, F.Write.Offset);
    auto Note = [&](const std::string &Message, const python::Position &At,
                    NoteKind Kind = NoteKind::Place) {
      E.addNote(message(Message, File, At.Offset), Kind);
    };
    Note("'" + F.Saver + "' saved the tensor for backward here, and the "
         "backward checks that its version counter has not moved since",
         F.Saved);
    Note(!F.CarriedState.empty()
             ? "the forward returns the state here; a caller that passes "
               "it back as '" + F.CarriedState + "' writes in the next "
               "call what this call saved"
         : F.ThroughResult
             ? "the forward returns a value computed through it: the "
               "backward of whoever trains this module fails"
             : "the backward that fails is here",
         F.Backward);
    if (F.FixWithheld.empty()) {
      for (const python::Edit &Fix : F.Fix)
        cantFail(E.Message.Fix[File].add(clang::tooling::Replacement(
            File, Fix.Offset, Fix.Length, Fix.Text)));
      if (!F.Fix.empty()) {
        E.FixTitle = "Write it out of place";
        E.Applicability = FixApplicability::Safe;
      }
    } else
      Note("no fix is offered: " + F.FixWithheld, F.Write, NoteKind::NoFix);
    Note("on every supported torch: autograd checks the version counter of "
         "each tensor it saved (measured on 2.11.0 and 2.15.0)",
         F.Write, NoteKind::EveryTorch);
    C.Findings.push_back(std::move(E));
  }
}

} // namespace ddpguard
