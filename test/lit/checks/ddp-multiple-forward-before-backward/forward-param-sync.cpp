// DDP broadcasts buffers before a forward only if require_forward_param_sync
// is set: the construction and every grad-mode forward set it, a forward with
// grad mode off clears it (runtime/src/DDPCore.cpp, PyTorch's _pre_forward /
// _post_forward). So the first forward after a no-grad forward does not
// broadcast, and cannot clobber.
// RUN: %check_ddpguard %s %t -- %mock_flags
#include <nets.h>

// o1 = D(a); D(b) under no_grad (broadcasts); o2 = D(c) (does not).
void afterNoGrad(Net net, PG pg, torch::Tensor a, torch::Tensor b,
                 torch::Tensor c) {
  DDP d(net, pg); // first
  // CHECK-FIXES: DDP d(net, pg, ddpguard::DDPOptions().broadcast_buffers(false)); // first
  auto o1 = d(a);
  torch::Tensor p;
  {
    torch::NoGradGuard guard;
    p = d(b);
    // CHECK-MESSAGES: :[[@LINE-1]]:9: warning: forward call on DDP-wrapped 'd' before the backward of the forward at line [[@LINE-5]]:
    // CHECK-MESSAGES: :[[@LINE-6]]:13: note: earlier forward on 'd' is here
  }
  auto o2 = d(c);
  (o1 + o2 * p).sum().backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:23: note: the backward that fails is here
}

// The grad-mode forward after it sets the flag again: o3 = D(e) broadcasts.
void secondAfterNoGrad(Net net, PG pg, torch::Tensor a, torch::Tensor c,
                       torch::Tensor e) {
  DDP d(net, pg); // second
  // CHECK-FIXES: DDP d(net, pg, ddpguard::DDPOptions().broadcast_buffers(false)); // second
  {
    torch::NoGradGuard guard;
    d(a);
  }
  auto o2 = d(c);
  auto o3 = d(e);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd' before the backward of the forward at line [[@LINE-2]]:
  (o2 + o3).sum().backward();
}

// Only on one way to it: o2 = D(c) may broadcast.
void afterNoGradOnOneBranch(Net net, PG pg, torch::Tensor a, torch::Tensor b,
                            torch::Tensor c, bool k) {
  DDP d(net, pg); // third
  // CHECK-FIXES: DDP d(net, pg, ddpguard::DDPOptions().broadcast_buffers(false)); // third
  auto o1 = d(a);
  if (k) {
    torch::NoGradGuard guard;
    d(b);
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: forward call on DDP-wrapped 'd' before the backward of the forward at line [[@LINE-4]]:
  }
  auto o2 = d(c);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd' before the backward of the forward at line [[@LINE-7]]:
  (o1 + o2).sum().backward();
}
