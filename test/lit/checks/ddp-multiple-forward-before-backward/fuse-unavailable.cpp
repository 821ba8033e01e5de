// --fix-mode=fuse where the forwards cannot be fused: the diagnostic says
// why, and the broadcast fix is offered in a note (not applied by --fix).
// RUN: %check_ddpguard --fix-mode=fuse --unfixed %s %t -- %mock_flags
#include <nets.h>

void loop(Net net, PG pg, std::vector<torch::Tensor> xs) {
  DDP d(net, pg);
  torch::Tensor loss;
  for (const auto &x : xs)
    loss = loss + d(x).sum();
  // CHECK-MESSAGES: :[[@LINE-1]]:19: warning: forward call on DDP-wrapped 'd'
  // CHECK-MESSAGES: :[[@LINE-2]]:19: note: cannot fuse the forwards: the forwards are different iterations of a loop
  // CHECK-MESSAGES: :[[@LINE-3]]:19: note: or set 'broadcast_buffers' to false
  // CHECK-FIXES: {{^}}  DDP d(net, pg);{{$}}
  loss.backward();
}

void outputFeedsNextInput(Net net, PG pg, torch::Tensor a) {
  DDP d(net, pg);
  auto o1 = d(a);
  auto o2 = d(o1);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd'
  // CHECK-MESSAGES: :[[@LINE-2]]:13: note: cannot fuse the forwards: the forward at line [[@LINE-2]] takes the output of the forward at line [[@LINE-3]]
  o2.sum().backward();
}
