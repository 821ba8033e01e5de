// A user-written DDP described by rewrite-rules/examples/hand-rolled.yaml:
// recognised through --rules / RuleFiles, fixed by setting its field.
// RUN: %check_ddpguard --rules=%rules/examples/hand-rolled.yaml %s %t -- %mock_flags
#include <nets.h>

namespace trainer {
// Holds a module and a process group; broadcasts buffers before each forward
// unless broadcast_buffers is false.
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
  // CHECK-FIXES: {{^}}  trainer::HandRolledDDP d{net, pg};{{$}}
  // CHECK-FIXES-NEXT: {{^}}  d.broadcast_buffers = false;{{$}}
  auto o1 = d(a);
  auto o2 = d.forward(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd' before the backward of the forward at line [[@LINE-2]]:
  // CHECK-MESSAGES: :[[@LINE-6]]:27: note: 'broadcast_buffers' is true by default in this construction of 'd'
  // CHECK-MESSAGES: :[[@LINE-3]]:13: note: cannot fuse the forwards: 'trainer::HandRolledDDP' has no fused forward
  (o1 + o2).sum().backward();
}

void fieldSetTrue(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  trainer::HandRolledDDP d{net, pg};
  d.broadcast_buffers = true;
  // CHECK-FIXES: {{^}}  d.broadcast_buffers = false;{{$}}
  auto o1 = d(a);
  auto o2 = d(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd'
  // CHECK-MESSAGES: :[[@LINE-5]]:25: note: 'broadcast_buffers' is set to true here
  (o1 + o2).sum().backward();
}

void fieldSetFalse(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  trainer::HandRolledDDP d{net, pg};
  d.broadcast_buffers = false;
  auto o1 = d(a);
  auto o2 = d(b);
  (o1 + o2).sum().backward();
}
