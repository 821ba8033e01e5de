//===- Modules.h - Which torch modules have buffers or save outputs ------===//
//
// torch.nn, torchvision and timm classes by qualified name: which have
// buffers that a forward may save, and which save their output.
//
//===----------------------------------------------------------------------===//

#ifndef DDPGUARD_TORCH_MODULES_H
#define DDPGUARD_TORCH_MODULES_H

#include "llvm/ADT/StringRef.h"
#include <optional>

namespace ddpguard {
namespace torch {

using llvm::StringRef;

/// Whether a module has buffers that its forward saves, as far as the code
/// tells: IfInputRequiresGrad when its forward uses them only against what
/// derives from its inputs (x / self.std), so that they are saved only when
/// an input requires grad.
enum class Buffers { No, IfInputRequiresGrad, Yes, Unknown };

Buffers either(Buffers A, Buffers B);

/// A module inside another: what reaches it may derive from the outer
/// module's parameters, so its buffers may be saved whatever the input.
Buffers nested(Buffers B);

/// torch.nn classes with buffers (running statistics): the rest of
/// torch.nn has none. Containers hold what their arguments hold.
Buffers torchNNBuffers(StringRef Class, bool TrackingOff, bool TrackingOn);

/// torchvision's model builders: those without batch norm or other buffers.
Buffers torchvisionBuffers(StringRef Builder);

/// timm models whose buffers were counted (scripts/timm-buffers.py, timm
/// 1.0.31): these have none; the rest measured have batch norm's running
/// statistics or index buffers (Swin, BEiT, EVA-02, LeViT, MaxViT).
std::optional<Buffers> timmBuffers(StringRef Model);

/// model.cuda(rank), model.to(device), ...: the same module.
bool returnsItsModule(StringRef Method);

/// torch.nn activations whose forward saves its output (their functions'
/// "r:" rules in SavedOperands.def).
bool savesOutput(StringRef Class);
/// torch.nn layers that save their input for backward ("torch.nn.Conv2d").
bool savesInput(StringRef Class);

} // namespace torch
} // namespace ddpguard

#endif
