// Parameters of the module class and of the holder type, followed to the
// callers' constructions.
// RUN: %check_ddpguard --rules=%S/Inputs/impl-rule.yaml %s %t-impl -- %mock_flags -I%S/Inputs
// RUN: %check_ddpguard --rules=%S/Inputs/holder-rule.yaml %s %t-holder -- %mock_flags -I%S/Inputs
#include "wrapped.h"
using trainer::WrappedDDP;
using trainer::WrappedDDPImpl;

void byImpl(WrappedDDPImpl &m, torch::Tensor a, torch::Tensor b) {
  auto o1 = m.forward(a);
  auto o2 = m.forward(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'm' before the backward of the forward at line [[@LINE-2]]:
  // CHECK-MESSAGES: :[[@LINE+11]]:18: note: 'w' is constructed here and is passed to 'byImpl'; 'broadcast_buffers' is true by default
  (o1 + o2).sum().backward();
}
void byHolder(WrappedDDP h, torch::Tensor a, torch::Tensor b) {
  auto o1 = h(a);
  auto o2 = h->forward(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'h' before the backward of the forward at line [[@LINE-2]]:
  // CHECK-MESSAGES: :[[@LINE+4]]:18: note: 'w' is constructed here and is passed to 'byHolder'; 'broadcast_buffers' is true by default
  (o1 + o2).sum().backward();
}
void caller(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  WrappedDDP w = WrappedDDP(net, pg);
  // CHECK-FIXES: {{^}}  WrappedDDP w = WrappedDDP(net, pg, false);{{$}}
  byImpl(*w, a, b);
  byHolder(w, a, b);
}
