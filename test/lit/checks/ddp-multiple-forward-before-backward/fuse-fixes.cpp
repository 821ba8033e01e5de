// --fix-mode=fuse: consecutive forwards on one DDP object become one
// forward_group call, which broadcasts once.
// RUN: %check_ddpguard --fix-mode=fuse %s %t -- %mock_flags
#include <nets.h>

void declarations(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg);
  auto o1 = d(a);
  torch::Tensor o2 = d(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:22: warning: forward call on DDP-wrapped 'd'
  // CHECK-MESSAGES: :[[@LINE-2]]:22: note: or set 'broadcast_buffers' to false
  // A declared type that is not plain 'auto' is kept: each output takes its
  // element of the fused call's tuple.
  // CHECK-FIXES: {{^}}  auto ddpguard_outputs_1 = d.forward_group(a, b);{{$}}
  // CHECK-FIXES-NEXT: {{^}}  auto o1 = std::get<0>(std::move(ddpguard_outputs_1));{{$}}
  // CHECK-FIXES-NEXT: {{^}}  torch::Tensor o2 = std::get<1>(std::move(ddpguard_outputs_1));{{$}}
  (o1 + o2).sum().backward();
}

void autoDeclarations(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg);
  auto o1 = d(a);
  auto o2 = d(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd'
  // CHECK-FIXES: {{^}}  auto [o1, o2] = d.forward_group(a, b);{{$}}
  (o1 + o2).sum().backward();
}

void assignments(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg);
  torch::Tensor o1, o2;
  o1 = d(a);
  o2 = d.forward(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:8: warning: forward call on DDP-wrapped 'd'
  // CHECK-FIXES: {{^}}  std::tie(o1, o2) = d.forward_group(a, b);{{$}}
  (o1 + o2).sum().backward();
}

void threeViewsThroughPointer(Net net, PG pg, torch::Tensor a, torch::Tensor b,
                              torch::Tensor c) {
  auto p = std::make_shared<DDP>(net, pg);
  auto v1 = p->forward(a);
  auto v2 = p->forward(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'p'
  auto v3 = p->forward(c);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'p'
  // CHECK-FIXES: {{^}}  auto [v1, v2, v3] = p->forward_group(a, b, c);{{$}}
  (v1 + v2 + v3).sum().backward();
}

void severalArguments(Net net, PG pg, torch::Tensor a, torch::Tensor b,
                      torch::Tensor mask) {
  DDP d(net, pg);
  auto o1 = d(a, mask);
  auto o2 = d(b, mask);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd'
  // CHECK-FIXES: {{^}}  auto [o1, o2] = d.forward_group(std::make_tuple(a, mask), std::make_tuple(b, mask));{{$}}
  (o1 + o2).sum().backward();
}
