// A member holder declared empty and assigned in the constructor body
// through register_module, as LibTorch models are written.
// RUN: %check_ddpguard --rules=%S/Inputs/impl-rule.yaml %s %t-impl -- %mock_flags -I%S/Inputs
// RUN: %check_ddpguard --rules=%S/Inputs/holder-rule.yaml %s %t-holder -- %mock_flags -I%S/Inputs
#include "wrapped.h"
using trainer::WrappedDDP;
using trainer::WrappedDDPImpl;

struct Trainer : torch::nn::Module {
  WrappedDDP w{nullptr};
  Trainer(Net net, PG pg) { w = register_module("w", WrappedDDP(net, pg)); }
  // CHECK-FIXES: {{^}}  Trainer(Net net, PG pg) { w = register_module("w", WrappedDDP(net, pg, false)); }{{$}}
  void step(torch::Tensor a, torch::Tensor b) {
    auto o1 = w(a);
    auto o2 = w->forward(b);
    // CHECK-MESSAGES: :[[@LINE-1]]:15: warning: forward call on DDP-wrapped 'w' before the backward of the forward at line [[@LINE-2]]:
    // CHECK-MESSAGES: :[[@LINE-6]]:54: note: 'broadcast_buffers' is true by default in this construction of 'w'
    (o1 + o2).sum().backward();
  }
};

// Assigned after an empty declaration in the same function.
void assigned(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  WrappedDDP w = nullptr;
  w = WrappedDDP(net, pg);
  // CHECK-FIXES: {{^}}  w = WrappedDDP(net, pg, false);{{$}}
  auto o1 = w(a);
  auto o2 = w(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'w' before the backward of the forward at line [[@LINE-2]]:
  (o1 + o2).sum().backward();
}
