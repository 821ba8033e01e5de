// ddpguard's DDP behind a TORCH_MODULE-style holder, fused: the holder's
// call operator reaches the module's methods with `->`, so the fused call is
// spelled `h->forward_group(...)` (it would not compile with `.`).
// RUN: %check_ddpguard --fix-mode=fuse %s %t -- %mock_flags
#include <nets.h>

class DDPHolder : public torch::nn::ModuleHolder<DDP> {
public:
  using torch::nn::ModuleHolder<DDP>::ModuleHolder;
};

void step(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDPHolder h(net, pg);
  auto o1 = h(a);
  auto o2 = h->forward(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'h' before the backward of the forward at line [[@LINE-2]]:
  // CHECK-FIXES: {{^}}  auto [o1, o2] = h->forward_group(a, b);{{$}}
  (o1 + o2).sum().backward();
}
