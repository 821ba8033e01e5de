//===- TorchTables.cpp - What torch's operations and modules do ----------===//

#include "TorchTables.h"
#include "llvm/ADT/STLExtras.h"

namespace ddpguard {
namespace python {
namespace detail {

const SavedOp SavedOps[] = {
#define SAVED_OP(Name, Form, Result, Saves)                                    \
  {Name, SavedOpForm::Form, SavedOpResult::Result, Saves},
#include "Frontend/SavedOperands.def"
};

/// The entry for an operation called in this form (Any stands for all).
const SavedOp *findSavedOp(StringRef Name, SavedOpForm Called) {
  for (const SavedOp &Op : SavedOps)
    if (Op.Name == Name &&
        (Op.Form == SavedOpForm::Any || Op.Form == Called))
      return &Op;
  return nullptr;
}

llvm::SmallVector<SaveRule, 2> saveRules(StringRef Saves) {
  llvm::SmallVector<SaveRule, 2> Rules;
  llvm::SmallVector<StringRef, 4> Parts;
  Saves.split(Parts, ' ', -1, /*KeepEmpty=*/false);
  for (StringRef Part : Parts) {
    auto [Saved, Triggers] = Part.split(':');
    SaveRule Rule;
    if (Saved != "r")
      Rule.Operand = Saved.front() - '0';
    for (char Trigger : Triggers)
      Rule.Triggers.push_back(Trigger - '0');
    Rules.push_back(std::move(Rule));
  }
  return Rules;
}

/// Tensor methods that write their tensor in place: PyTorch's trailing
/// underscore, less those that change only autograd's view of it (as the
/// C++ frontend's matchTensorWrite).
bool isInPlaceMethod(StringRef Name) {
  return Name.size() > 1 && Name.ends_with("_") && !Name.starts_with("_") &&
         Name != "requires_grad_" && Name != "detach_" &&
         Name != "share_memory_";
}

/// Tensor methods whose result shares the tensor's storage and version
/// counter: the table's views, and conversions that return the tensor
/// itself when there is nothing to convert (as `to`).
bool isViewMethod(StringRef Name) {
  if (const SavedOp *Op = findSavedOp(Name, SavedOpForm::Method))
    return Op->Result == SavedOpResult::View;
  return llvm::is_contained({"float", "double", "half", "bfloat16", "cuda",
                             "cpu", "type", "movedim", "swapaxes", "unflatten",
                             "unfold"},
                            Name);
}

/// In-place methods whose out-of-place twin takes the same arguments:
/// x.mul_(2) is x = x.mul(2). Each twin was confirmed with hasattr on
/// torch 2.11.0 and 2.15.0; fill_, zero_, copy_, normal_, uniform_ and
/// fill_diagonal_ have none, and bernoulli_ and resize_ have twins that do
/// something else.
bool hasOutOfPlaceTwin(StringRef Method) {
  return llvm::is_contained(
      {"add_", "sub_", "mul_", "div_", "clamp_", "clamp_min_", "clamp_max_",
       "clip_", "relu_", "sigmoid_", "tanh_", "exp_", "log_", "abs_", "neg_",
       "sqrt_", "rsqrt_", "pow_", "masked_fill_", "index_put_", "index_fill_",
       "index_add_", "index_copy_", "scatter_", "scatter_add_", "lerp_",
       "addcmul_", "addcdiv_", "square_", "reciprocal_", "floor_", "round_",
       "sign_", "sin_", "cos_", "nan_to_num_", "true_divide_", "multiply_",
       "subtract_", "divide_", "masked_scatter_", "put_", "addmm_", "addmv_",
       "baddbmm_"},
      Method);
}


Buffers either(Buffers A, Buffers B) {
  if (A == Buffers::Yes || B == Buffers::Yes)
    return Buffers::Yes;
  if (A == Buffers::Unknown || B == Buffers::Unknown)
    return Buffers::Unknown;
  return A == Buffers::No && B == Buffers::No ? Buffers::No
                                              : Buffers::IfInputRequiresGrad;
}

/// A module inside another: what reaches it may derive from the outer
/// module's parameters, so its buffers may be saved whatever the input.
Buffers nested(Buffers B) {
  return B == Buffers::IfInputRequiresGrad ? Buffers::Yes : B;
}

/// torch.nn classes with buffers (running statistics): the rest of
/// torch.nn has none. Containers hold what their arguments hold.
Buffers torchNNBuffers(StringRef Class, bool TrackingOff,
                              bool TrackingOn) {
  if (Class.contains("BatchNorm"))
    return TrackingOff ? Buffers::No : Buffers::Yes;
  if (Class.contains("InstanceNorm"))
    return TrackingOn ? Buffers::Yes : Buffers::No;
  return Buffers::No;
}

/// torchvision's model builders: those without batch norm or other buffers.
Buffers torchvisionBuffers(StringRef Builder) {
  const char *const WithoutBuffers[] = {
      "alexnet",  "vgg11",    "vgg13",    "vgg16",    "vgg19",
      "vit_b_16", "vit_b_32", "vit_l_16", "vit_l_32", "vit_h_14",
      "convnext_tiny", "convnext_small", "convnext_base", "convnext_large"};
  for (const char *Name : WithoutBuffers)
    if (Builder == Name)
      return Buffers::No;
  return Buffers::Yes;
}

/// model.cuda(rank), model.to(device), ...: the same module.
bool returnsItsModule(StringRef Method) {
  return Method == "cuda" || Method == "to" || Method == "cpu" ||
         Method == "train" || Method == "float" || Method == "half" ||
         Method == "double" || Method == "bfloat16" ||
         Method == "requires_grad_";
}

/// timm models whose buffers were counted (scripts/timm-buffers.py, timm
/// 1.0.31): these have none; the rest measured have batch norm's running
/// statistics or index buffers (Swin, BEiT, EVA-02, LeViT, MaxViT).
std::optional<Buffers> timmBuffers(StringRef Model) {
  const char *const WithoutBuffers[] = {
      "convnext_tiny", "convnext_atto", "convnextv2_atto",
      "vit_tiny_patch16_224", "vit_small_patch16_224", "vit_base_patch16_224",
      "deit_tiny_patch16_224", "deit3_small_patch16_224", "mixer_b16_224",
      "caformer_s18", "poolformer_s12", "edgenext_xx_small", "nfnet_l0",
      "cait_xxs24_224", "twins_pcpvt_small", "pit_ti_224"};
  const char *const WithBuffers[] = {
      "resnet18", "resnet50", "efficientnet_b0", "mobilenetv3_large_100",
      "regnety_002", "densenet121", "swin_tiny_patch4_window7_224",
      "beit_base_patch16_224", "eva02_tiny_patch14_224", "levit_128s",
      "maxvit_tiny_tf_224", "repvgg_a2", "ghostnet_100", "mobilevit_xs",
      "xcit_nano_12_p16_224", "fastvit_t8", "efficientvit_b0",
      "inception_v3"};
  for (const char *Name : WithoutBuffers)
    if (Model == Name)
      return Buffers::No;
  for (const char *Name : WithBuffers)
    if (Model == Name)
      return Buffers::Yes;
  return std::nullopt;
}

/// torch.nn activations whose forward saves its output (their functions'
/// "r:" rules in SavedOperands.def).
bool savesOutput(StringRef Class) {
  return llvm::is_contained({"torch.nn.ReLU", "torch.nn.Sigmoid",
                             "torch.nn.Tanh", "torch.nn.Softmax",
                             "torch.nn.LogSoftmax"},
                            Class);
}

} // namespace detail
} // namespace python
} // namespace ddpguard
