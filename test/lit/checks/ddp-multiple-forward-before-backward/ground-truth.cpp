// Every row of the ground-truth table (docs/ground-truth.md), one function
// each: the five error rows warn, the nine ok rows stay silent.
// RUN: %check_ddpguard %s %t -- %mock_flags
#include <nets.h>

// D(a), D(b), backward of both: error.
void twoForwardsOneBackward(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg); // row 1
  // CHECK-FIXES: DDP d(net, pg, ddpguard::DDPOptions().broadcast_buffers(false)); // row 1
  auto o1 = d(a);
  auto o2 = d(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd' before the backward of the forward at line [[@LINE-2]]: DDP broadcasts buffers before every forward and overwrites the buffers that forward saved for backward [ddp-multiple-forward-before-backward]
  // CHECK-MESSAGES: :[[@LINE-3]]:13: note: earlier forward on 'd' is here; its saved buffers are overwritten
  (o1 + o2).sum().backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:19: note: the backward that fails is here
  // CHECK-MESSAGES: :[[@LINE-8]]:7: note: 'broadcast_buffers' is true by default in this construction of 'd'
  // CHECK-MESSAGES: :[[@LINE-6]]:13: note: or fuse the forwards into one call
}

// Same, broadcast_buffers(false): ok.
void broadcastOff(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg, ddpguard::DDPOptions().broadcast_buffers(false));
  auto o1 = d(a);
  auto o2 = d(b);
  (o1 + o2).sum().backward();
}

// Same, module without buffers: ok.
void noBuffers(Plain net, PG pg, torch::Tensor a, torch::Tensor b) {
  ddpguard::DistributedDataParallel<Plain> d(net, pg);
  auto o1 = d(a);
  auto o2 = d(b);
  (o1 + o2).sum().backward();
}

// Same, module in eval mode: error (eval mode does not stop the broadcast).
void evalMode(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  net->eval();
  DDP d(net, pg); // row 4
  // CHECK-FIXES: DDP d(net, pg, ddpguard::DDPOptions().broadcast_buffers(false)); // row 4
  auto o1 = d(a);
  auto o2 = d(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd' before the backward of the forward at line [[@LINE-2]]:
  // CHECK-MESSAGES: :[[@LINE-3]]:13: note: earlier forward on 'd' is here
  (o1 + o2).sum().backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:19: note: the backward that fails is here
  // CHECK-MESSAGES: :[[@LINE-8]]:7: note: 'broadcast_buffers' is true by default
  // CHECK-MESSAGES: :[[@LINE-6]]:13: note: or fuse the forwards into one call
}

// o1 = D(a) with grad, D(b) under no_grad, backward of o1: error.
void secondUnderNoGrad(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg); // row 5
  // CHECK-FIXES: DDP d(net, pg, ddpguard::DDPOptions().broadcast_buffers(false)); // row 5
  auto o1 = d(a);
  {
    torch::NoGradGuard guard;
    auto o2 = d(b);
    // CHECK-MESSAGES: :[[@LINE-1]]:15: warning: forward call on DDP-wrapped 'd' before the backward of the forward at line [[@LINE-4]]:
    // CHECK-MESSAGES: :[[@LINE-5]]:13: note: earlier forward on 'd' is here
  }
  o1.sum().backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:12: note: the backward that fails is here
  // CHECK-MESSAGES: :[[@LINE-11]]:7: note: 'broadcast_buffers' is true by default
  // CHECK-MESSAGES: :[[@LINE-7]]:15: note: cannot fuse the forwards: the forward at line [[@LINE-7]] runs inside the block opened at line [[@LINE-9]], which the forward at line [[@LINE-10]] is not in{{$}}
}

// D(a) under no_grad, o2 = D(b), backward of o2: ok.
void firstUnderNoGrad(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg);
  {
    torch::NoGradGuard guard;
    auto o1 = d(a);
  }
  auto o2 = d(b);
  o2.sum().backward();
}

// D(a) with grad and its output unused, o2 = D(b), backward of o2 only: ok.
void firstOutputUnused(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg);
  d(a);
  auto o2 = d(b);
  o2.sum().backward();
}

// Loop: forward then backward in each iteration: ok.
void forwardBackwardPerIteration(Net net, PG pg, std::vector<torch::Tensor> xs) {
  DDP d(net, pg);
  for (const auto &x : xs) {
    auto loss = d(x).sum();
    loss.backward();
  }
}

// Loop: forward x3 accumulating a loss, one backward after the loop: error.
void accumulateThenBackward(Net net, PG pg, torch::Tensor x) {
  DDP d(net, pg); // row 9
  // CHECK-FIXES: DDP d(net, pg, ddpguard::DDPOptions().broadcast_buffers(false)); // row 9
  torch::Tensor loss;
  for (int i = 0; i < 3; ++i)
    loss = loss + d(x).sum();
  // CHECK-MESSAGES: :[[@LINE-1]]:19: warning: forward call on DDP-wrapped 'd' before the backward of the forward at line [[@LINE-1]]:
  // CHECK-MESSAGES: :[[@LINE-2]]:19: note: the forwards happen in different iterations of the loop at line [[@LINE-3]]
  loss.backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:8: note: the backward that fails is here
  // CHECK-MESSAGES: :[[@LINE-9]]:7: note: 'broadcast_buffers' is true by default
  // CHECK-MESSAGES: :[[@LINE-6]]:19: note: cannot fuse the forwards: the forwards are different iterations of a loop
}

// forward, backward, forward, backward: ok.
void alternate(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg);
  d(a).sum().backward();
  d(b).sum().backward();
}

// o1 = D(a), D(b), autograd::grad(o1 ...): error.
void gradThroughFirst(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg); // row 11
  // CHECK-FIXES: DDP d(net, pg, ddpguard::DDPOptions().broadcast_buffers(false)); // row 11
  auto o1 = d(a);
  auto o2 = d(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd' before the backward of the forward at line [[@LINE-2]]:
  // CHECK-MESSAGES: :[[@LINE-3]]:13: note: earlier forward on 'd' is here
  torch::autograd::grad({o1.sum()}, {a});
  // CHECK-MESSAGES: :[[@LINE-1]]:3: note: the backward that fails is here
  // CHECK-MESSAGES: :[[@LINE-8]]:7: note: 'broadcast_buffers' is true by default
  // CHECK-MESSAGES: :[[@LINE-6]]:13: note: or fuse the forwards into one call
}

// D(a), o2 = D(b), backward of o2 with retain_graph: ok.
void retainGraphOnSecond(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg);
  auto o1 = d(a);
  auto o2 = d(b);
  o2.sum().backward({}, /*retain_graph=*/true);
}

// o1 = D(a).detach(), o2 = D(b), backward of both: ok.
void detachedFirst(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg);
  auto o1 = d(a).detach();
  auto o2 = d(b);
  (o1 + o2).sum().backward();
}

// o1 = D(a), the inner module called directly (no DDP), backward of o1: ok.
void innerModuleDirectly(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg);
  auto o1 = d(a);
  auto o2 = d.module()(b);
  (o1 + o2).sum().backward();
}
