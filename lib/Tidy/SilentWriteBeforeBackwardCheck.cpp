//===- SilentWriteBeforeBackwardCheck.cpp ---------------------------------===//

#include "SilentWriteBeforeBackwardCheck.h"
#include "clang/AST/ASTContext.h"

using namespace clang;
using namespace ddpguard::clangfe;

namespace ddpguard {
namespace tidy {

std::vector<WriteFinding>
SilentWriteBeforeBackwardCheck::findings(TranslationUnitAnalysis &Analysis) {
  return Analysis.runSilentWrites();
}

void SilentWriteBeforeBackwardCheck::report(const WriteFinding &F) {
  SourceLocation At = F.ThroughData ? F.ThroughData->Call->getExprLoc()
                                    : F.Write.Call->getBeginLoc();
  unsigned SavedLine = lineOf(F.Forward.Call->getBeginLoc());
  std::string Module = F.Module ? F.Module->getNameAsString() : "";
  StringRef Saver =
      F.Saver ? sourceText(F.Saver->getSourceRange(), *Context) : "";
  if (F.Saver && Saver.empty())
    Saver = "an operation";
  std::string Backward =
      F.ThroughResult
          ? std::string("a backward through the result of this forward")
          : "the backward at line " +
                std::to_string(lineOf(F.Backward.Call->getExprLoc()));
  if (F.ThroughData) {
    StringRef Tensor =
        sourceText(F.ThroughData->Tensor->getSourceRange(), *Context);
    warning(At, "'%0' writes '%1'%select{| (the parameters of '%3')}2 "
                "through .data() in place, which %select{the forward|'%5'}4 "
                "at line %6 saved for backward; a write through .data() does "
                "not bump the version counter, so %7 raises nothing and "
                "computes gradients from values the forward did not see")
        << F.ThroughData->Operation
        << (Tensor.empty() ? StringRef("a tensor") : Tensor) << !Module.empty()
        << Module << (F.Saver != nullptr) << Saver << SavedLine << Backward;
  } else {
    warning(At, "step of '%0' (%1) writes the parameters of '%2' in place, "
                "which the forward at line %3 saved for backward; it writes "
                "through p.data(), which does not bump the version counter, "
                "so %4 raises nothing and computes gradients from values the "
                "forward did not see")
        << F.Opt->Decl->getNameAsString() << F.Opt->Type << Module
        << SavedLine << Backward;
  }
  if (F.Saver)
    note(F.Saver->getBeginLoc(), "'%0' saved the tensor for backward here")
        << Saver;
  else
    note(F.Forward.Call->getBeginLoc(),
         "forward on '%0' is here; it saved the parameters of '%0' for "
         "backward")
        << Module;
  if (F.ThroughResult)
    note(F.Backward.Call->getBeginLoc(),
         "the forward returns a value computed through it: the backward of "
         "whoever trains this module reads the written values");
  else if (F.Loop)
    note(F.Backward.Call->getExprLoc(),
         "this backward, in the next iteration of the loop at line %0, reads "
         "the written values without an error")
        << lineOf(F.Loop->getBeginLoc());
  else
    note(F.Backward.Call->getExprLoc(),
         "this backward reads the written values without an error");
  if (F.ThroughData)
    note(At,
         "no fix is offered: moving the write after the backward changes "
         "what the code between them reads, and a write that bumps the "
         "version counter would make that backward fail instead",
         NoteKind::NoFix);
  else
    note(At,
         "no fix is offered: moving the step after the backward would make "
         "it use that backward's gradients too, and recomputing the forward "
         "after the step would change what the later loss sees; both change "
         "what training computes",
         NoteKind::NoFix);
  note(At,
       "on every supported LibTorch: autograd sees no write that leaves the "
       "version counter as it was (measured on 2.11.0 and 2.15.0, "
       "test/silent-cpp)",
       NoteKind::EveryTorch);
}

} // namespace tidy
} // namespace ddpguard
