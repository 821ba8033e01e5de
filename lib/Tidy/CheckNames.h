//===- CheckNames.h - The names of ddpguard's checks ----------------------===//
//
// One place for the names: the module registers them, and the CLI, its
// reports and ddpguard-clangd list them from here.
//
//===----------------------------------------------------------------------===//

#ifndef DDPGUARD_TIDY_CHECKNAMES_H
#define DDPGUARD_TIDY_CHECKNAMES_H

#include "llvm/ADT/StringRef.h"

namespace ddpguard {
namespace checks {

/// A forward on a DDP object whose buffer broadcast overwrites buffers an
/// earlier forward saved (MultipleForwardBeforeBackwardCheck.md).
inline constexpr llvm::StringLiteral MultipleForwardBeforeBackward =
    "ddp-multiple-forward-before-backward";
/// An optimizer step that writes parameters a forward saved, before a
/// backward through that forward (OptimizerStepBeforeBackwardCheck.md).
inline constexpr llvm::StringLiteral OptimizerStepBeforeBackward =
    "optimizer-step-before-backward";

/// An in-place write to parameters outside an optimizer, between a forward
/// that saved them and a backward through it
/// (ParameterWriteBeforeBackwardCheck.md).
inline constexpr llvm::StringLiteral ParameterWriteBeforeBackward =
    "parameter-write-before-backward";

/// An in-place write on a value that an operation saved, before a backward
/// through it (InPlaceWriteBeforeBackwardCheck.md).
inline constexpr llvm::StringLiteral InPlaceWriteBeforeBackward =
    "inplace-write-before-backward";

/// A write that leaves the version counters as they were (a fused step, a
/// write through .data) on a tensor a forward saved, before a backward
/// through it: nothing fails, the gradients are wrong
/// (SilentWriteBeforeBackwardCheck.md).
inline constexpr llvm::StringLiteral SilentWriteBeforeBackward =
    "silent-write-before-backward";

inline constexpr llvm::StringLiteral All[] = {
    MultipleForwardBeforeBackward, OptimizerStepBeforeBackward,
    ParameterWriteBeforeBackward, InPlaceWriteBeforeBackward,
    SilentWriteBeforeBackward};

inline bool isDdpguardCheck(llvm::StringRef Name) {
  for (llvm::StringRef Check : All)
    if (Name == Check)
      return true;
  return false;
}

} // namespace checks
} // namespace ddpguard

#endif
