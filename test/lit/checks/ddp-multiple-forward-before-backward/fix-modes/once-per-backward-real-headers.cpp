// --fix-mode=once-per-backward against the real LibTorch headers and
// ddpguard's runtime header (TORCH_ARG setters): the fixed file compiles and
// is clean, and a construction that already sets the policy is silent.
// REQUIRES: libtorch
// RUN: %check_ddpguard --fix-mode=once-per-backward %s %t -- %torch_flags
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

struct EncoderImpl : torch::nn::Module {
  EncoderImpl()
      : fc(register_module("fc", torch::nn::Linear(16, 8))),
        bn(register_module("bn", torch::nn::BatchNorm1d(8))) {}
  torch::Tensor forward(torch::Tensor x) { return bn(fc(x)); }
  torch::nn::Linear fc;
  torch::nn::BatchNorm1d bn;
};
TORCH_MODULE(Encoder);

using Group = c10::intrusive_ptr<c10d::ProcessGroup>;

void twoViews(Encoder encoder, Group group, torch::Tensor v1, torch::Tensor v2) {
  ddpguard::DistributedDataParallel<Encoder> model(encoder, group);
  // CHECK-FIXES: {{^}}  ddpguard::DistributedDataParallel<Encoder> model(encoder, group, ddpguard::DDPOptions().buffer_broadcast(ddpguard::BufferBroadcast::kOncePerBackward));{{$}}
  auto z1 = model(v1);
  auto z2 = model(v2);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'model'
  // CHECK-MESSAGES: :[[@LINE-2]]:13: note: the fix broadcasts buffers once per backward, which keeps them synchronised
  torch::matmul(z1, z2.t()).sum().backward();
}

void optionsChain(Encoder encoder, Group group, torch::Tensor v1, torch::Tensor v2) {
  auto options = ddpguard::DDPOptions().find_unused_parameters(false);
  // CHECK-FIXES: {{^}}  auto options = ddpguard::DDPOptions().find_unused_parameters(false).buffer_broadcast(ddpguard::BufferBroadcast::kOncePerBackward);{{$}}
  ddpguard::DistributedDataParallel<Encoder> model(encoder, group, options);
  auto z1 = model(v1);
  auto z2 = model(v2);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'model'
  (z1 + z2).sum().backward();
}

void alreadyOncePerBackward(Encoder encoder, Group group, torch::Tensor v1,
                            torch::Tensor v2) {
  ddpguard::DDPOptions options;
  options.buffer_broadcast(ddpguard::BufferBroadcast::kOncePerBackward);
  ddpguard::DistributedDataParallel<Encoder> model(encoder, group, options);
  auto z1 = model(v1);
  auto z2 = model(v2);
  (z1 + z2).sum().backward();
}
