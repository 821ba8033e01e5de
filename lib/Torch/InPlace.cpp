//===- InPlace.cpp --------------------------------------------------------===//

#include "InPlace.h"
#include "llvm/ADT/STLExtras.h"

namespace ddpguard {
namespace torch {

using llvm::StringRef;

/// Trailing-underscore methods that leave the data and the version counter
/// as they are (each checked with `_version` on torch 2.11.0):
/// requires_grad_ sets a flag, detach_ cuts autograd history, share_memory_
/// moves the storage into shared memory, rename_ renames dimensions.
static bool leavesDataAsIs(StringRef Name) {
  return llvm::is_contained(
      {"requires_grad_", "detach_", "share_memory_", "rename_"}, Name);
}

bool isInPlaceOp(StringRef Name) {
  // `operator+=` and its kin, not the comparisons that also end in '='
  // (nor `operator=`, which rebinds a handle).
  if (Name.ends_with("="))
    return Name.starts_with("operator") && Name.size() > 9 &&
           Name != "operator==" && Name != "operator!=" &&
           Name != "operator<=" && Name != "operator>=";
  // "_" alone is Python's throwaway name; `__init__` and other dunders are
  // Python's protocol, not torch's convention. One leading underscore stays:
  // torch._foreach_add_ bumps every tensor's version.
  return Name.size() > 1 && Name.ends_with("_") && !Name.starts_with("__") &&
         !leavesDataAsIs(Name);
}

} // namespace torch
} // namespace ddpguard
