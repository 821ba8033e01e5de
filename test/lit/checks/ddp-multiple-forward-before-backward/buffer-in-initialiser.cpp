// A buffer registered in a constructor's member initialiser
// (`scale(register_buffer(...))`) is a buffer like one registered in the
// body: the module has buffers, and two forwards before one backward warn.
// RUN: %check_ddpguard %s %t -- %mock_flags
#include <nets.h>

struct ScaledImpl : torch::nn::Module {
  ScaledImpl()
      : l(register_module("l", torch::nn::Linear(4, 4))),
        scale(register_buffer("scale", torch::zeros({4}))) {}
  torch::Tensor forward(const torch::Tensor &x) { return l(x) * scale; }
  torch::nn::Linear l;
  torch::Tensor scale;
};
TORCH_MODULE(Scaled);

void scaled(Scaled net, PG pg, torch::Tensor a, torch::Tensor b) {
  ddpguard::DistributedDataParallel<Scaled> d(net, pg); // scaled
  // CHECK-FIXES: ddpguard::DistributedDataParallel<Scaled> d(net, pg, ddpguard::DDPOptions().broadcast_buffers(false)); // scaled
  auto o1 = d(a);
  auto o2 = d(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd' before the backward of the forward at line [[@LINE-2]]:
  // CHECK-MESSAGES: :[[@LINE-3]]:13: note: earlier forward on 'd' is here
  (o1 + o2).sum().backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:19: note: the backward that fails is here
}

// Without the buffer: no warning.
struct UnscaledImpl : torch::nn::Module {
  UnscaledImpl() : l(register_module("l", torch::nn::Linear(4, 4))) {}
  torch::Tensor forward(const torch::Tensor &x) { return l(x); }
  torch::nn::Linear l;
};
TORCH_MODULE(Unscaled);

void unscaled(Unscaled net, PG pg, torch::Tensor a, torch::Tensor b) {
  ddpguard::DistributedDataParallel<Unscaled> d(net, pg);
  auto o1 = d(a);
  auto o2 = d(b);
  (o1 + o2).sum().backward();
}
