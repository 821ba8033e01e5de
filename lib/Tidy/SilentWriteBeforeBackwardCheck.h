//===- SilentWriteBeforeBackwardCheck.h - clang-tidy adapter --------------===//
//
// silent-write-before-backward: a write that leaves the version counters as
// they were, on what a forward or an operation saved for backward, before a
// backward through it: LibTorch's SGD step (it writes through p.data()) and
// in-place writes through `x.data()`. Nothing is raised; the backward
// computes gradients from values the forward did not see. The other write
// checks never report these writes. The options are
// WriteBeforeBackwardCheck's.
//
//===----------------------------------------------------------------------===//

#ifndef DDPGUARD_TIDY_SILENTWRITEBEFOREBACKWARDCHECK_H
#define DDPGUARD_TIDY_SILENTWRITEBEFOREBACKWARDCHECK_H

#include "WriteBeforeBackwardCheck.h"

namespace ddpguard {
namespace tidy {

class SilentWriteBeforeBackwardCheck : public WriteBeforeBackwardCheck {
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
