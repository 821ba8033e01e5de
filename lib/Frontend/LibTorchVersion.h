//===- LibTorchVersion.h - Which LibTorch the code is judged by -----------===//
//
// The failure depends on the LibTorch a program is built against: from
// 2.12.1 PyTorch's DDP, and ddpguard's runtime, put the buffers' version
// counters back after the per-forward broadcast. The checker reads the
// version from the macros of <torch/version.h>, unless an option names it.
//
//===----------------------------------------------------------------------===//

#ifndef DDPGUARD_FRONTEND_LIBTORCHVERSION_H
#define DDPGUARD_FRONTEND_LIBTORCHVERSION_H

#include "Rules/RuleSet.h"
#include <optional>
#include <string>

namespace clang {
class Preprocessor;
}

namespace ddpguard {
namespace clangfe {

/// The LibTorch version findings are judged by, and where it came from.
struct JudgedVersion {
  enum class Source {
    /// The TorchVersion option.
    Option,
    /// TORCH_VERSION_MAJOR/MINOR/PATCH as the translation unit defines them
    /// (or <torch/version.h> on its include path defines them).
    Header,
    /// Neither: the oldest supported version.
    Assumed,
  };
  TorchVersion Version = OldestSupportedTorch;
  Source From = Source::Assumed;
  /// Header: where the macros are defined, as a note names it.
  std::string Where;

  /// "LibTorch 2.11.0, from <torch/version.h>", for a note.
  std::string describe() const;
};

/// Override when set, else the version the macros define in PP's
/// translation unit, else the one in <torch/version.h> found on its include
/// path, else OldestSupportedTorch.
JudgedVersion judgeVersion(clang::Preprocessor &PP,
                           std::optional<TorchVersion> Override);

} // namespace clangfe
} // namespace ddpguard

#endif
