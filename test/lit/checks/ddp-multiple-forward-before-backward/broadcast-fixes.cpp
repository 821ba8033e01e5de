// Every form of the broadcast fix: add the option, flip true, extend a
// chain, an options variable (initialised or set later), make_shared, a
// member initialiser (shapes.cpp), and one fix for several warnings.
// RUN: %check_ddpguard %s %t -- %mock_flags
#include <nets.h>

void flipTrue(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg, ddpguard::DDPOptions().broadcast_buffers(true));
  // CHECK-FIXES: DDP d(net, pg, ddpguard::DDPOptions().broadcast_buffers(false));
  auto o1 = d(a);
  auto o2 = d(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd'
  // CHECK-MESSAGES: :[[@LINE-5]]:59: note: 'broadcast_buffers' is set to true here
  (o1 + o2).sum().backward();
}

void extendChain(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg, ddpguard::DDPOptions().find_unused_parameters(true));
  // CHECK-FIXES: DDP d(net, pg, ddpguard::DDPOptions().find_unused_parameters(true).broadcast_buffers(false));
  auto o1 = d(a);
  auto o2 = d(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd'
  // CHECK-MESSAGES: :[[@LINE-5]]:7: note: 'broadcast_buffers' is true by default
  (o1 + o2).sum().backward();
}

void optionsVariable(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  auto options = ddpguard::DDPOptions().bucket_cap_mb(10);
  // CHECK-FIXES: auto options = ddpguard::DDPOptions().bucket_cap_mb(10).broadcast_buffers(false);
  DDP d(net, pg, options);
  auto o1 = d(a);
  auto o2 = d(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd'
  (o1 + o2).sum().backward();
}

void optionsSetLater(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  ddpguard::DDPOptions options;
  options.broadcast_buffers(true);
  // CHECK-FIXES: options.broadcast_buffers(false);
  DDP d(net, pg, options);
  auto o1 = d(a);
  auto o2 = d(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd'
  // CHECK-MESSAGES: :[[@LINE-6]]:29: note: 'broadcast_buffers' is set to true here
  (o1 + o2).sum().backward();
}

void optionsSetToFalseLater(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  ddpguard::DDPOptions options;
  options.broadcast_buffers(false);
  DDP d(net, pg, options);
  auto o1 = d(a);
  auto o2 = d(b);
  (o1 + o2).sum().backward();
}

void makeShared(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  auto d = std::make_shared<DDP>(net, pg);
  // CHECK-FIXES: auto d = std::make_shared<DDP>(net, pg, ddpguard::DDPOptions().broadcast_buffers(false));
  auto o1 = d->forward(a);
  auto o2 = d->forward(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd'
  (o1 + o2).sum().backward();
}

// Three forwards: two warnings, one fix at the construction.
void threeViews(Net net, PG pg, torch::Tensor a, torch::Tensor b,
                torch::Tensor c) {
  DDP d(net, pg);
  // CHECK-FIXES: DDP d(net, pg, ddpguard::DDPOptions().broadcast_buffers(false));
  auto o1 = d(a);
  auto o2 = d(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd' before the backward of the forward at line [[@LINE-2]]
  auto o3 = d(c);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd' before the backward of the forward at line [[@LINE-4]]
  (o1 + o2 + o3).sum().backward();
}
