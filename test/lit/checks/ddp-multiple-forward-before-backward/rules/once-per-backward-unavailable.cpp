// --fix-mode=once-per-backward on a wrapper whose rule has no
// once-per-backward (rewrite-rules/examples/hand-rolled.yaml): no fix, and a
// note says why; the fuse fix is not available either.
// RUN: %check_ddpguard --fix-mode=once-per-backward --unfixed --rules=%rules/examples/hand-rolled.yaml %s %t -- %mock_flags
#include <nets.h>

namespace trainer {
struct HandRolledDDP {
  Net module;
  PG group;
  bool broadcast_buffers = true;
  torch::Tensor forward(const torch::Tensor &x);
  torch::Tensor operator()(const torch::Tensor &x) { return forward(x); }
};
} // namespace trainer

void fieldDefaulted(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  trainer::HandRolledDDP d{net, pg};
  auto o1 = d(a);
  auto o2 = d.forward(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd' before the backward of the forward at line [[@LINE-2]]:
  // CHECK-MESSAGES: :[[@LINE-4]]:27: note: 'broadcast_buffers' is true by default in this construction of 'd'
  // CHECK-MESSAGES: :[[@LINE-3]]:13: note: cannot broadcast buffers once per backward automatically: 'trainer::HandRolledDDP' has no once-per-backward buffer policy (its rule in '{{.*}}hand-rolled.yaml' has no 'once-per-backward'){{$}}
  // CHECK-MESSAGES: :[[@LINE-4]]:13: note: cannot fuse the forwards: 'trainer::HandRolledDDP' has no fused forward
  (o1 + o2).sum().backward();
}
