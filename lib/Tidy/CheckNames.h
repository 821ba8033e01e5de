//===- CheckNames.h - The table of ddpguard's checks ----------------------===//
//
// One row per check: its name, summary, fix availability, doc page and what
// a translation unit must name for it to find anything. The module
// registers the names; the CLI lists the table (--list-checks, its JSON),
// writes SARIF's rule metadata from it, and keeps each unit that names a
// row's triggers (Relevance.h). A new check adds its name and one row here
// (scripts/add_check.py does).
//
//===----------------------------------------------------------------------===//

#ifndef DDPGUARD_TIDY_CHECKNAMES_H
#define DDPGUARD_TIDY_CHECKNAMES_H

#include "Tidy/FindingRecord.h"
#include "llvm/ADT/StringRef.h"
#include <array>
#include <iterator>

namespace ddpguard {
namespace checks {

/// A forward on a DDP object whose buffer broadcast overwrites buffers an
/// earlier forward saved.
inline constexpr llvm::StringLiteral MultipleForwardBeforeBackward =
    "ddp-multiple-forward-before-backward";
/// An optimizer step that writes parameters a forward saved, before a
/// backward through that forward.
inline constexpr llvm::StringLiteral OptimizerStepBeforeBackward =
    "optimizer-step-before-backward";
/// An in-place write to parameters outside an optimizer, between a forward
/// that saved them and a backward through it.
inline constexpr llvm::StringLiteral ParameterWriteBeforeBackward =
    "parameter-write-before-backward";
/// An in-place write on a value that an operation saved, before a backward
/// through it.
inline constexpr llvm::StringLiteral InPlaceWriteBeforeBackward =
    "inplace-write-before-backward";

/// A write that leaves the version counters as they were (a fused step, a
/// write through .data) on a tensor a forward saved, before a backward
/// through it: nothing fails, the gradients are wrong
/// (SilentWriteBeforeBackwardCheck.md).
inline constexpr llvm::StringLiteral SilentWriteBeforeBackward =
    "silent-write-before-backward";

/// Whether a finding of the check can carry a fix, as ruff's
/// FixAvailability.
enum class FixAvailability { Always, Sometimes, Never };

/// What the preprocessed tokens of a translation unit must name for a check
/// to find anything in it (Relevance.h); a bit set.
enum Trigger : unsigned {
  /// A DDP wrapper a rule names, anywhere.
  WrapperType = 1,
  /// An optimizer whose step may write, outside LibTorch's torch/optim.
  OptimizerType = 2,
  /// A call named 'backward', outside LibTorch's own headers.
  BackwardCall = 4,
};

struct CheckInfo {
  llvm::StringLiteral Name;
  /// The name in CamelCase, as SARIF's rule name.
  llvm::StringLiteral Title;
  /// One line, as SARIF's shortDescription and --list-checks show it.
  llvm::StringLiteral Summary;
  /// What goes wrong, in a few sentences (SARIF's fullDescription).
  llvm::StringLiteral Explanation;
  /// What to do, in Markdown (SARIF's help).
  llvm::StringLiteral Help;
  FixAvailability Fix;
  /// Of the fix the check offers by default; None when it offers none.
  FixApplicability FixSafety;
  /// The check's page, relative to the repository's root.
  llvm::StringLiteral Doc;
  unsigned Triggers;
};

inline constexpr CheckInfo Table[] = {
    {MultipleForwardBeforeBackward, "MultipleForwardBeforeBackward",
     "Several forwards on a DDP-wrapped module before one backward while "
     "buffers are broadcast",
     "DDP broadcasts buffers in place before every forward; a second forward "
     "overwrites the BatchNorm statistics the first forward saved for "
     "backward, and autograd fails.",
     "Call `backward()` after each forward on the DDP-wrapped module, fuse "
     "the forwards into one call (`forward_group`), or construct DDP with "
     "`broadcast_buffers(false)` (each rank then keeps its own running "
     "statistics; synchronise them, e.g. SyncBatchNorm).",
     FixAvailability::Sometimes, FixApplicability::Unsafe,
     "lib/Tidy/MultipleForwardBeforeBackwardCheck.md", WrapperType},
    {OptimizerStepBeforeBackward, "OptimizerStepBeforeBackward",
     "An optimizer step between a forward and a backward through its graph",
     "The step writes the module's parameters in place; the forward saved "
     "them for backward, and the later backward through its graph fails.",
     "Finish every `backward()` through the module's graph before its "
     "optimizer's `step()`. The fix moves the step after the backward when "
     "nothing between them uses the module or its optimizer.",
     FixAvailability::Sometimes, FixApplicability::Safe,
     "lib/Tidy/OptimizerStepBeforeBackwardCheck.md", OptimizerType},
    {ParameterWriteBeforeBackward, "ParameterWriteBeforeBackward",
     "An in-place write to parameters outside an optimizer between a forward "
     "and a backward through its graph",
     "Weight clipping, an EMA update or a copy into a module's parameters "
     "bumps their version counters in any grad mode; the forward saved them "
     "for backward, and the later backward through its graph fails.",
     "Finish every `backward()` through the module's graph before the "
     "in-place write, or run the forward again after it; both change what "
     "training computes, so no fix is offered.",
     FixAvailability::Never, FixApplicability::None,
     "lib/Tidy/ParameterWriteBeforeBackwardCheck.md", BackwardCall},
    {InPlaceWriteBeforeBackward, "InPlaceWriteBeforeBackward",
     "An in-place write on a value that an operation saved for backward, "
     "before a backward through it",
     "sigmoid, tanh, softmax and relu save their result, a multiplication "
     "its operands; writing such a tensor in place (mul_, +=, h[i] = v, "
     "index_put_) bumps its version counter, and the later backward through "
     "the operation fails.",
     "Write the operation out of place (`y = y.mul(2)` for `y.mul_(2)`), so "
     "the saved tensor keeps its value.",
     FixAvailability::Sometimes, FixApplicability::Safe,
     "lib/Tidy/InPlaceWriteBeforeBackwardCheck.md", BackwardCall},
    {SilentWriteBeforeBackward, "SilentWriteBeforeBackward",
     "A write autograd's version counter does not see, on a tensor a forward "
     "saved, before a backward through it",
     "A fused optimizer step, a write through .data or a write under "
     "_unsafe_preserve_version_counter leaves the version counters as they "
     "were; the backward raises nothing and computes gradients from values "
     "the forward did not see.",
     "Finish every `backward()` through the forward's graph before the "
     "write, or run the forward again after it; both change what training "
     "computes, so no fix is offered.",
     FixAvailability::Never, FixApplicability::None,
     "lib/Tidy/SilentWriteBeforeBackwardCheck.md", BackwardCall},
};

/// The checks' names, in the table's order.
inline constexpr auto All = [] {
  std::array<llvm::StringRef, std::size(Table)> Names{};
  for (size_t I = 0; I < std::size(Table); ++I)
    Names[I] = Table[I].Name;
  return Names;
}();

/// The row of the check named Name; null when none is.
inline const CheckInfo *findCheck(llvm::StringRef Name) {
  for (const CheckInfo &Check : Table)
    if (Name == Check.Name)
      return &Check;
  return nullptr;
}

inline bool isDdpguardCheck(llvm::StringRef Name) {
  return findCheck(Name) != nullptr;
}

/// "always", "sometimes", "never".
inline llvm::StringRef fixAvailabilityName(FixAvailability Fix) {
  switch (Fix) {
  case FixAvailability::Always:
    return "always";
  case FixAvailability::Sometimes:
    return "sometimes";
  case FixAvailability::Never:
    return "never";
  }
  return "";
}

} // namespace checks
} // namespace ddpguard

#endif
