// LibTorch 2.11's real headers by -isystem (CMake's imported targets) and by
// -I (a Makefile, Bazel, an unpacked LibTorch zip): the same findings and
// fixes. A probe read through LibTorch's own API trains, so it is clean.
// REQUIRES: libtorch, full
// RUN: %check_ddpguard %s %t-isystem -- %torch_flags
// RUN: %check_ddpguard %s %t-I -- %torch_user_flags
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>
#include <iostream>

struct NetImpl : torch::nn::Module {
  NetImpl()
      : fc(register_module("fc", torch::nn::Linear(4, 4))),
        bn(register_module("bn", torch::nn::BatchNorm1d(4))) {}
  torch::Tensor forward(torch::Tensor x) { return bn(fc(x)); }
  torch::nn::Linear fc;
  torch::nn::BatchNorm1d bn;
};
TORCH_MODULE(Net);
using DDP = ddpguard::DistributedDataParallel<Net>;

torch::Tensor batch() { return torch::randn({8, 4}); }

void probe(DDP &ddp) {
  auto probe = ddp(batch());
  auto o2 = ddp(batch());
  std::cout << probe.mean().item<float>() << probe.detach().sum() << "\n";
  o2.sum().backward();
}

void twoForwards(Net net, c10::intrusive_ptr<c10d::ProcessGroup> pg) {
  DDP ddp(net, pg);
  // CHECK-FIXES: {{^}}  DDP ddp(net, pg, ddpguard::DDPOptions().broadcast_buffers(false));{{$}}
  auto o1 = ddp(batch());
  auto o2 = ddp(batch());
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'ddp' before the backward of the forward at line [[@LINE-2]]:
  (o1.mean() + o2.sum()).backward();
}
