//===- SilentWriteBeforeBackward.cpp --------------------------------------===//
//
// silent-write-before-backward: CheckResult's SilentWrites, as the CLI's
// findings.
//
//===----------------------------------------------------------------------===//

#include "PythonCheck.h"

using namespace llvm;
using clang::tidy::ClangTidyError;

namespace ddpguard {

void python_checks::renderSilentWriteBeforeBackward(
    const PythonCheckContext &C) {
  StringRef Check = checks::SilentWriteBeforeBackward;
  const std::string &File = C.File;
  const python::CheckResult &Result = C.Result;
  for (const python::SilentWriteFinding &F : Result.SilentWrites) {
    if (!reported(C, Check, F.Write.Offset))
      continue;
    Finding E(ClangTidyError(Check, ClangTidyError::Warning, "", false));
    using Way = python::SilentWriteFinding::Way;
    std::string What =
        F.WrittenBy == Way::FusedStep
            ? F.Operation + " (fused=True) writes the parameters of '" +
                  F.Module + "'"
        : F.WrittenBy == Way::CheckpointedStep
            ? F.Operation + " writes the parameters of '" + F.Module + "'"
            : "'" + F.Operation + "' writes '" + F.Tensor + "'" +
                  (F.Module.empty()
                       ? std::string()
                       : " (the parameters of '" + F.Module + "')");
    std::string How =
        F.WrittenBy == Way::FusedStep
            ? "a fused step does not bump the version counter"
        : F.WrittenBy == Way::Data
            ? "a write through .data does not bump the version counter"
        : F.WrittenBy == Way::CheckpointedStep
            ? "activation checkpointing recomputes that forward in the "
              "backward and checks no version counter"
            : "_unsafe_preserve_version_counter keeps the version counter";
    std::string Saver = F.Saver.empty()
                            ? "the forward at line " +
                                  std::to_string(F.Saved.Line)
                            : "'" + F.Saver + "' at line " +
                                  std::to_string(F.Saved.Line);
    E.Message = message(
        What + " in place, which " + Saver + " saved for backward; " +
            How + ", so " +
            (F.ThroughResult
                 ? std::string("a backward through the result of this "
                               "forward")
                 : "the backward at line " +
                       std::to_string(F.Backward.Line)) +
            " raises nothing and computes gradients from values the "
            "forward did not see",
        File, F.Write.Offset);
    auto Note = [&](const std::string &Message, const python::Position &At,
                    NoteKind Kind = NoteKind::Place) {
      E.addNote(message(Message, File, At.Offset), Kind);
    };
    Note("saved for backward here", F.Saved);
    Note(F.ThroughResult
             ? "the forward returns a value computed through it: the "
               "backward of whoever trains this module reads the written "
               "values"
             : "this backward reads the written values without an error",
         F.Backward);
    Note("no fix is offered: " + F.FixWithheld, F.Write, NoteKind::NoFix);
    Note(F.WrittenBy == Way::CheckpointedStep
             ? "on every supported torch: torch.utils.checkpoint, reentrant "
               "or not, recomputes the forward in the backward from the "
               "parameters as they are then (measured on 2.11.0 and "
               "2.15.0, test/python/silent)"
             : "on every supported torch: autograd sees no write that "
               "leaves the version counter as it was (measured on 2.11.0 "
               "and 2.15.0, test/python/silent)",
         F.Write, NoteKind::EveryTorch);
    C.Findings.push_back(std::move(E));
  }
}

} // namespace ddpguard
