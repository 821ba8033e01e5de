// A TORCH_MODULE-wrapped DDP called as `w->forward(x)`, found with the rule
// naming either the module class (WrappedDDPImpl) or its holder (WrappedDDP).
// RUN: %check_ddpguard --rules=%S/Inputs/impl-rule.yaml %s %t-impl -- %mock_flags -I%S/Inputs
// RUN: %check_ddpguard --rules=%S/Inputs/holder-rule.yaml %s %t-holder -- %mock_flags -I%S/Inputs
#include "wrapped.h"
using trainer::WrappedDDP;
using trainer::WrappedDDPImpl;

void step(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  WrappedDDP w(net, pg);
  // CHECK-FIXES: {{^}}  WrappedDDP w(net, pg, false);{{$}}
  auto o1 = w->forward(a);
  auto o2 = w->forward(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'w' before the backward of the forward at line [[@LINE-2]]:
  // CHECK-MESSAGES: :[[@LINE-5]]:14: note: 'broadcast_buffers' is true by default in this construction of 'w'
  (o1 + o2).sum().backward();
}
