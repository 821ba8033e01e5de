// The fix at the callers' constructions against the real LibTorch headers
// and ddpguard's runtime header: a helper takes the DDP object by pointer
// from a trainer's member and by shared_ptr from a make_shared variable;
// both constructions are fixed, and the fixed file compiles and is clean.
// REQUIRES: libtorch
// RUN: %check_ddpguard %s %t -- %torch_flags
// RUN: %check_ddpguard --fix-mode=once-per-backward --check-suffix=ONCE %s %t-once -- %torch_flags
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

#include <memory>

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
using DDP = ddpguard::DistributedDataParallel<Encoder>;

static void twoViews(DDP *model, torch::Tensor v1, torch::Tensor v2) {
  auto z1 = (*model)(v1);
  auto z2 = model->forward(v2);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'model'
  // CHECK-MESSAGES-ONCE: :[[@LINE-2]]:13: warning: forward call on DDP-wrapped 'model'
  torch::matmul(z1, z2.t()).sum().backward();
}

struct Trainer {
  Trainer(Encoder encoder, Group group) : model(encoder, group) {}
  // CHECK-FIXES: {{^}}  Trainer(Encoder encoder, Group group) : model(encoder, group, ddpguard::DDPOptions().broadcast_buffers(false)) {}{{$}}
  // CHECK-FIXES-ONCE: {{^}}  Trainer(Encoder encoder, Group group) : model(encoder, group, ddpguard::DDPOptions().buffer_broadcast(ddpguard::BufferBroadcast::kOncePerBackward)) {}{{$}}
  void step(torch::Tensor v1, torch::Tensor v2) { twoViews(&model, v1, v2); }
  DDP model;
};

static void sharedViews(const std::shared_ptr<DDP> &model, torch::Tensor v1,
                        torch::Tensor v2) {
  auto z1 = model->forward(v1);
  auto z2 = model->forward(v2);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'model'
  // CHECK-MESSAGES-ONCE: :[[@LINE-2]]:13: warning: forward call on DDP-wrapped 'model'
  (z1 + z2).sum().backward();
}

void train(Encoder encoder, Group group, torch::Tensor v1, torch::Tensor v2) {
  auto options = ddpguard::DDPOptions().find_unused_parameters(false);
  // CHECK-FIXES: {{^}}  auto options = ddpguard::DDPOptions().find_unused_parameters(false).broadcast_buffers(false);{{$}}
  // CHECK-FIXES-ONCE: {{^}}  auto options = ddpguard::DDPOptions().find_unused_parameters(false).buffer_broadcast(ddpguard::BufferBroadcast::kOncePerBackward);{{$}}
  auto model = std::make_shared<DDP>(encoder, group, options);
  sharedViews(model, v1, v2);
  Trainer trainer(encoder, group);
  trainer.step(v1, v2);
}
