// The module class made with std::make_shared, as LibTorch's holders do.
// RUN: %check_ddpguard --rules=%S/Inputs/impl-rule.yaml %s %t-impl -- %mock_flags -I%S/Inputs
// RUN: %check_ddpguard --rules=%S/Inputs/holder-rule.yaml %s %t-holder -- %mock_flags -I%S/Inputs
#include "wrapped.h"
using trainer::WrappedDDP;
using trainer::WrappedDDPImpl;

void step(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  auto w = std::make_shared<WrappedDDPImpl>(net, pg);
  // CHECK-FIXES: {{^}}  auto w = std::make_shared<WrappedDDPImpl>(net, pg, false);{{$}}
  auto o1 = w->forward(a);
  auto o2 = w->forward(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'w' before the backward of the forward at line [[@LINE-2]]:
  // CHECK-MESSAGES: :[[@LINE-5]]:12: note: 'broadcast_buffers' is true by default in this construction of 'w'
  (o1 + o2).sum().backward();
}
