//===- InPlace.h - Which operation names write their tensor in place -----===//
//
// The one in-place test of both frontends: a method or function name
// (`add_`, `torch._foreach_mul_`'s last part) or a C++ operator name
// (`operator+=`).
//
//===----------------------------------------------------------------------===//

#ifndef DDPGUARD_TORCH_INPLACE_H
#define DDPGUARD_TORCH_INPLACE_H

#include "llvm/ADT/StringRef.h"

namespace ddpguard {
namespace torch {

/// Whether an operation of this name writes its first tensor's data (and
/// bumps its version counter): PyTorch's trailing underscore, or a compound
/// assignment operator.
bool isInPlaceOp(llvm::StringRef Name);

} // namespace torch
} // namespace ddpguard

#endif
