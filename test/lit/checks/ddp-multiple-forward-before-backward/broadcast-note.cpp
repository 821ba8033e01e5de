// The broadcast fix changes behaviour (each rank keeps its own running
// statistics): the note that comes with it says so and names the fixes that
// keep buffers in sync; in fuse mode the alternative's note says it too.
// RUN: %check_ddpguard --check-suffix=BROADCAST %s %t.broadcast -- %mock_flags
// RUN: %check_ddpguard --fix-mode=fuse --check-suffix=FUSE %s %t.fuse -- %mock_flags
#include <nets.h>

void twoViews(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg);
  // CHECK-FIXES-BROADCAST: {{^}}  DDP d(net, pg, ddpguard::DDPOptions().broadcast_buffers(false));{{$}}
  // CHECK-FIXES-FUSE: {{^}}  auto [o1, o2] = d.forward_group(a, b);{{$}}
  auto o1 = d(a);
  auto o2 = d(b);
  // CHECK-MESSAGES-BROADCAST: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd'
  // CHECK-MESSAGES-BROADCAST: :[[@LINE-2]]:13: note: or fuse the forwards into one call
  // CHECK-MESSAGES-BROADCAST: :[[@LINE-3]]:13: note: the fix sets 'broadcast_buffers' to false, which changes behaviour: each rank then keeps its own running statistics, no longer rank 0's (BatchNorm's running_mean and running_var); fusing the forwards into one 'forward_group' call (FixMode: fuse) or broadcasting once per backward ('BufferBroadcast::kOncePerBackward') keeps buffers in sync{{$}}
  // CHECK-MESSAGES-FUSE: :[[@LINE-4]]:13: warning: forward call on DDP-wrapped 'd'
  // CHECK-MESSAGES-FUSE: :[[@LINE-5]]:13: note: or set 'broadcast_buffers' to false, which changes behaviour: each rank then keeps its own running statistics, no longer rank 0's (BatchNorm's running_mean and running_var){{$}}
  (o1 + o2).sum().backward();
}
