//===- TorchTables.h - What torch's operations and modules do ------------===//
//
// The Python frontend's tables of torch: which operations save which
// operands (SavedOperands.def, shared with the C++ frontend), which methods
// write in place or return views, which torch.nn modules have buffers or
// save their output, and which model builders have buffers.
//
//===----------------------------------------------------------------------===//

#ifndef DDPGUARD_PYTHONFRONTEND_TORCHTABLES_H
#define DDPGUARD_PYTHONFRONTEND_TORCHTABLES_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include <optional>

namespace ddpguard {
namespace python {
namespace detail {

using llvm::StringRef;

/// SavedOperands.def, the table the C++ frontend reads (which operands or
/// result an operation saves for backward), without its Clang side.
enum class SavedOpForm { Any, Method, Function, Functional };
enum class SavedOpResult { View, New, Constant };
struct SavedOp {
  StringRef Name;
  SavedOpForm Form;
  SavedOpResult Result;
  /// "i:jk" saves operand i, "r:jk" the result, if operand j or k requires
  /// grad.
  StringRef Saves;
};
/// The entry for an operation called in this form (Any stands for all).
const SavedOp *findSavedOp(StringRef Name, SavedOpForm Called);

/// One rule of SavedOp::Saves: the operand saved (none: the result) if one
/// of Triggers requires grad.
struct SaveRule {
  std::optional<unsigned> Operand;
  llvm::SmallVector<unsigned, 3> Triggers;
};
llvm::SmallVector<SaveRule, 2> saveRules(StringRef Saves);

/// Tensor methods that write their tensor in place: PyTorch's trailing
/// underscore, less those that change only autograd's view of it (as the
/// C++ frontend's matchTensorWrite).
bool isInPlaceMethod(StringRef Name);

/// Tensor methods whose result shares the tensor's storage and version
/// counter: the table's views, and conversions that return the tensor
/// itself when there is nothing to convert (as `to`).
bool isViewMethod(StringRef Name);

/// In-place methods whose out-of-place twin takes the same arguments:
/// x.mul_(2) is x = x.mul(2). Each twin was confirmed with hasattr on
/// torch 2.11.0 and 2.15.0; fill_, zero_, copy_, normal_, uniform_ and
/// fill_diagonal_ have none, and bernoulli_ and resize_ have twins that do
/// something else.
bool hasOutOfPlaceTwin(StringRef Method);

/// Whether a module has buffers that its forward saves, as far as the file
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
Buffers torchNNBuffers(StringRef Class, bool TrackingOff,
                              bool TrackingOn);

/// torchvision's model builders: those without batch norm or other buffers.
Buffers torchvisionBuffers(StringRef Builder);

/// model.cuda(rank), model.to(device), ...: the same module.
bool returnsItsModule(StringRef Method);

/// timm models whose buffers were counted (scripts/timm-buffers.py, timm
/// 1.0.31): these have none; the rest measured have batch norm's running
/// statistics or index buffers (Swin, BEiT, EVA-02, LeViT, MaxViT).
std::optional<Buffers> timmBuffers(StringRef Model);

/// torch.nn activations whose forward saves its output (their functions'
/// "r:" rules in SavedOperands.def).
bool savesOutput(StringRef Class);

} // namespace detail
} // namespace python
} // namespace ddpguard

#endif
