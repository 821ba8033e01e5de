//===- InPlaceWriteBeforeBackwardCheck.h - clang-tidy adapter -------------===//
//
// inplace-write-before-backward: an in-place operation on a value that an
// earlier operation saved for backward (`gate = torch::sigmoid(x);
// gate.mul_(2)`: sigmoid saves its result; `h * g` saves h, then `h += y`),
// before a backward through that operation's graph, or in a module's
// forward whose caller backpropagates through the result. What each
// operation saves is SavedOperands.def's. The options and the shared notes
// are WriteBeforeBackwardCheck's.
//
//===----------------------------------------------------------------------===//

#ifndef DDPGUARD_TIDY_INPLACEWRITEBEFOREBACKWARDCHECK_H
#define DDPGUARD_TIDY_INPLACEWRITEBEFOREBACKWARDCHECK_H

#include "WriteBeforeBackwardCheck.h"

namespace ddpguard {
namespace tidy {

class InPlaceWriteBeforeBackwardCheck : public WriteBeforeBackwardCheck {
public:
  using WriteBeforeBackwardCheck::WriteBeforeBackwardCheck;

protected:
  std::vector<clangfe::WriteFinding>
  findings(clangfe::TranslationUnitAnalysis &Analysis) override;
  void report(const clangfe::WriteFinding &F) override;
};

} // namespace tidy
} // namespace ddpguard

#endif
