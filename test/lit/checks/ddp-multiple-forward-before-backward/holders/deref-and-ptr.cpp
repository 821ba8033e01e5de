// `(*w).forward(x)` and `w.ptr()->forward(x)` name the holder's object.
// RUN: %check_ddpguard --rules=%S/Inputs/impl-rule.yaml %s %t-impl -- %mock_flags -I%S/Inputs
// RUN: %check_ddpguard --rules=%S/Inputs/holder-rule.yaml %s %t-holder -- %mock_flags -I%S/Inputs
#include "wrapped.h"
using trainer::WrappedDDP;
using trainer::WrappedDDPImpl;

void step(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  WrappedDDP w(net, pg);
  // CHECK-FIXES: {{^}}  WrappedDDP w(net, pg, false);{{$}}
  auto o1 = (*w).forward(a);
  auto o2 = w.ptr()->forward(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'w' before the backward of the forward at line [[@LINE-2]]:
  (o1 + o2).sum().backward();
}
