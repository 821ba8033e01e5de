// The fuse fix's locals never take a name the translation unit already
// spells (a local, a global, a macro): the count goes on past it. Two runs in
// one function get different names.
// RUN: %check_ddpguard --fix-mode=fuse %s %t -- %mock_flags
#include <nets.h>

torch::Tensor next_batch();

// A name the translation unit already spells is never taken: the locals
// count on past it.
void namesInScope(Net net, PG pg) {
  int ddpguard_input_1 = 0;
  DDP d(net, pg);
  auto o1 = d(next_batch());
  auto o2 = d(next_batch());
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd'
  // CHECK-FIXES: {{^}}  auto ddpguard_input_2 = next_batch();{{$}}
  // CHECK-FIXES-NEXT: {{^}}  auto ddpguard_input_3 = next_batch();{{$}}
  // CHECK-FIXES-NEXT: {{^}}  auto [o1, o2] = d.forward_group(ddpguard_input_2, ddpguard_input_3);{{$}}
  (o1 + o2).sum().backward();
  (void)ddpguard_input_1;
}

// Two runs in one function get different names.
void twoRuns(Net net, PG pg) {
  DDP d(net, pg);
  {
    auto o1 = d(next_batch());
    auto o2 = d(next_batch());
    // CHECK-MESSAGES: :[[@LINE-1]]:15: warning: forward call on DDP-wrapped 'd'
    // CHECK-FIXES: {{^}}    auto ddpguard_input_2 = next_batch();{{$}}
    // CHECK-FIXES-NEXT: {{^}}    auto ddpguard_input_3 = next_batch();{{$}}
    // CHECK-FIXES-NEXT: {{^}}    auto [o1, o2] = d.forward_group(ddpguard_input_2, ddpguard_input_3);{{$}}
    (o1 + o2).sum().backward();
  }
  auto p1 = d(next_batch());
  auto p2 = d(next_batch());
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd'
  // CHECK-FIXES: {{^}}  auto ddpguard_input_4 = next_batch();{{$}}
  // CHECK-FIXES-NEXT: {{^}}  auto ddpguard_input_5 = next_batch();{{$}}
  // CHECK-FIXES-NEXT: {{^}}  auto [p1, p2] = d.forward_group(ddpguard_input_4, ddpguard_input_5);{{$}}
  (p1 + p2).sum().backward();
}
