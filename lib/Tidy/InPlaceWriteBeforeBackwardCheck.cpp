//===- InPlaceWriteBeforeBackwardCheck.cpp --------------------------------===//

#include "InPlaceWriteBeforeBackwardCheck.h"
#include "Fix/Fixes.h"
#include "clang/AST/ASTContext.h"

using namespace clang;
using namespace ddpguard::clangfe;

namespace ddpguard {
namespace tidy {

std::vector<WriteFinding>
InPlaceWriteBeforeBackwardCheck::findings(TranslationUnitAnalysis &Analysis) {
  return Analysis.runValueWrites();
}

void InPlaceWriteBeforeBackwardCheck::report(const WriteFinding &F) {
  const TensorWrite &Write = *F.OnValue;
  SourceLocation At = Write.Call->getExprLoc();
  StringRef Tensor = sourceText(Write.Tensor->getSourceRange(), *Context);
  StringRef Saver = sourceText(F.Saver->getSourceRange(), *Context);
  if (Tensor.empty())
    Tensor = "a tensor";
  if (Saver.empty())
    Saver = "an operation";
  unsigned SaverLine = lineOf(F.Forward.Call->getBeginLoc());
  fix::FixOutcome Fix = fix::makeOutOfPlaceFix(F, *Context);
  {
    auto Warning =
        F.ThroughResult
            ? warning(At, "'%0' writes '%1' in place, which '%2' at line %3 "
                       "saved for backward; a backward through the result of "
                       "this forward will fail")
            : warning(At, "'%0' writes '%1' in place, which '%2' at line %3 "
                       "saved for backward; the backward at line %4 through "
                       "it will fail");
    Warning << Write.Operation << Tensor << Saver << SaverLine;
    if (!F.ThroughResult)
      Warning << lineOf(F.Backward.Call->getExprLoc());
    for (const FixItHint &Hint : Fix.Hints)
      Warning << Hint;
  }
  if (Fix.applies())
    recordFix(FixApplicability::Safe, "Write it out of place");
  note(F.Saver->getBeginLoc(),
       "'%0' saved the tensor for backward here, and the backward checks "
       "that its version counter has not moved since")
      << Saver;
  if (F.ThroughResult)
    note(F.Backward.Call->getBeginLoc(),
         "the forward returns a value computed through it: the backward of "
         "whoever trains this module fails");
  else
    noteBackward(F);
  if (!Fix.applies())
    note(At, "no fix is offered: %0", NoteKind::NoFix) << Fix.Reason;
  noteJudgedBy(At);
}

} // namespace tidy
} // namespace ddpguard
