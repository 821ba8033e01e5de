//===- OptimizerStepBeforeBackwardCheck.h - clang-tidy adapter ------------===//
//
// optimizer-step-before-backward: an optimizer step that writes, in place,
// parameters that a forward saved for backward, before a backward through
// that forward's graph (a GAN's optD.step() before the generator's
// backward through D(fake)). The options and the shared notes are
// WriteBeforeBackwardCheck's; the analysis lives in Frontend/ and Model/.
//
//===----------------------------------------------------------------------===//

#ifndef DDPGUARD_TIDY_OPTIMIZERSTEPBEFOREBACKWARDCHECK_H
#define DDPGUARD_TIDY_OPTIMIZERSTEPBEFOREBACKWARDCHECK_H

#include "WriteBeforeBackwardCheck.h"

namespace ddpguard {
namespace tidy {

class OptimizerStepBeforeBackwardCheck : public WriteBeforeBackwardCheck {
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
