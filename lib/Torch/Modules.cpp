//===- Modules.cpp --------------------------------------------------------===//

#include "Modules.h"
#include "llvm/ADT/STLExtras.h"

namespace ddpguard {
namespace torch {

Buffers either(Buffers A, Buffers B) {
  if (A == Buffers::Yes || B == Buffers::Yes)
    return Buffers::Yes;
  if (A == Buffers::Unknown || B == Buffers::Unknown)
    return Buffers::Unknown;
  return A == Buffers::No && B == Buffers::No ? Buffers::No
                                              : Buffers::IfInputRequiresGrad;
}

Buffers nested(Buffers B) {
  return B == Buffers::IfInputRequiresGrad ? Buffers::Yes : B;
}

Buffers torchNNBuffers(StringRef Class, bool TrackingOff, bool TrackingOn) {
  if (Class.contains("BatchNorm"))
    return TrackingOff ? Buffers::No : Buffers::Yes;
  if (Class.contains("InstanceNorm"))
    return TrackingOn ? Buffers::Yes : Buffers::No;
  return Buffers::No;
}

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

bool returnsItsModule(StringRef Method) {
  return Method == "cuda" || Method == "to" || Method == "cpu" ||
         Method == "train" || Method == "float" || Method == "half" ||
         Method == "double" || Method == "bfloat16" ||
         Method == "requires_grad_";
}

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

bool savesOutput(StringRef Class) {
  return llvm::is_contained({"torch.nn.ReLU", "torch.nn.Sigmoid",
                             "torch.nn.Tanh", "torch.nn.Softmax",
                             "torch.nn.LogSoftmax"},
                            Class);
}

bool savesInput(StringRef Class) {
  // Measured on torch 2.11.0: these layers save their input for the
  // weight's gradient (the norms for the input's too); activations,
  // dropout and pooling layers are not among them.
  static const char *const Saving[] = {
      "Linear",      "Bilinear",    "Conv1d",         "Conv2d",
      "Conv3d",      "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
      "LayerNorm",   "GroupNorm",   "BatchNorm1d",    "BatchNorm2d",
      "BatchNorm3d", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"};
  return Class.consume_front("torch.nn.") && llvm::is_contained(Saving, Class);
}

} // namespace torch
} // namespace ddpguard
