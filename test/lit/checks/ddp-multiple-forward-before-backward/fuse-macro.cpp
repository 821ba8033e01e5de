// The fuse fix through macros: an argument the macro computes from its own
// parameters cannot be spelled outside the expansion, so the fix is withheld
// with a note saying why (plugin, CLI, exported fixes); a macro that passes
// its arguments through unchanged is fused with the arguments as written.
// RUN: %check_ddpguard --fix-mode=fuse --unfixed --check-suffix=FUSE %s %t.fuse -- %mock_flags
// RUN: %check_ddpguard --check-suffix=BROADCAST %s %t.broadcast -- %mock_flags
#include <nets.h>

#define SCALED_FWD(D, X) D((X) * 2.0)
#define FWD(D, X) D(X)

void computed(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg);
  // CHECK-FIXES-BROADCAST: {{^}}  DDP d(net, pg, ddpguard::DDPOptions().broadcast_buffers(false));{{$}}
  // CHECK-FIXES-FUSE: {{^}}  DDP d(net, pg);{{$}}
  auto o1 = SCALED_FWD(d, a);
  auto o2 = SCALED_FWD(d, b);
  // CHECK-MESSAGES-FUSE: :[[@LINE-1]]:24: warning: forward call on DDP-wrapped 'd'
  // CHECK-MESSAGES-FUSE: :[[@LINE-2]]:24: note: cannot fuse the forwards: an argument of the forward is computed inside the expansion of macro 'SCALED_FWD' and cannot be spelled outside it
  // CHECK-MESSAGES-FUSE: :[[@LINE-3]]:24: note: or set 'broadcast_buffers' to false
  // CHECK-MESSAGES-BROADCAST: :[[@LINE-4]]:24: warning: forward call on DDP-wrapped 'd'
  // CHECK-MESSAGES-BROADCAST: :[[@LINE-5]]:24: note: cannot fuse the forwards: an argument of the forward is computed inside the expansion of macro 'SCALED_FWD' and cannot be spelled outside it
  // CHECK-FIXES-FUSE: {{^}}  auto o1 = SCALED_FWD(d, a);{{$}}
  // CHECK-FIXES-FUSE-NEXT: {{^}}  auto o2 = SCALED_FWD(d, b);{{$}}
  (o1 + o2).sum().backward();
}

void passedThrough(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg);
  auto o1 = FWD(d, a);
  auto o2 = FWD(d, b * 2.0);
  // CHECK-MESSAGES-FUSE: :[[@LINE-1]]:17: warning: forward call on DDP-wrapped 'd'
  // CHECK-MESSAGES-BROADCAST: :[[@LINE-2]]:17: warning: forward call on DDP-wrapped 'd'
  // CHECK-MESSAGES-BROADCAST: :[[@LINE-3]]:17: note: or fuse the forwards into one call
  // CHECK-FIXES-FUSE: {{^}}  auto ddpguard_input_1 = b * 2.0;{{$}}
  // CHECK-FIXES-FUSE-NEXT: {{^}}  auto [o1, o2] = d.forward_group(a, ddpguard_input_1);{{$}}
  (o1 + o2).sum().backward();
}
