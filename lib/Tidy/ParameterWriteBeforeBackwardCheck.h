//===- ParameterWriteBeforeBackwardCheck.h - clang-tidy adapter -----------===//
//
// parameter-write-before-backward: an in-place operation on a module's
// parameters outside an optimizer (weight clipping with `p.clamp_()`, an
// EMA update `t.mul_(m).add_(s, 1 - m)`, `copy_` from another network),
// between a forward that saved them for backward and a backward through
// that forward's graph. NoGradGuard does not help: the write bumps the
// version counters in any grad mode. The options and the shared notes are
// WriteBeforeBackwardCheck's.
//
//===----------------------------------------------------------------------===//

#ifndef DDPGUARD_TIDY_PARAMETERWRITEBEFOREBACKWARDCHECK_H
#define DDPGUARD_TIDY_PARAMETERWRITEBEFOREBACKWARDCHECK_H

#include "WriteBeforeBackwardCheck.h"

namespace ddpguard {
namespace tidy {

class ParameterWriteBeforeBackwardCheck : public WriteBeforeBackwardCheck {
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
