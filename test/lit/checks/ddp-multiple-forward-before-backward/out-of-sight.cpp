// A DDP object whose construction is not visible: broadcast is assumed on
// (the default), no broadcast fix can be made, and the fuse fix is offered.
// RUN: %check_ddpguard --unfixed %s %t -- %mock_flags
#include <nets.h>

void byReference(DDP &D, torch::Tensor a, torch::Tensor b) {
  auto o1 = D(a);
  auto o2 = D(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'D' before the backward of the forward at line [[@LINE-2]]:
  // CHECK-MESSAGES: :[[@LINE-3]]:13: note: earlier forward on 'D' is here
  // CHECK-MESSAGES: :[[@LINE+5]]:19: note: the backward that fails is here
  // CHECK-MESSAGES: :[[@LINE-6]]:23: note: 'D' is constructed out of sight; assuming 'broadcast_buffers' is true, the default
  // CHECK-MESSAGES: :[[@LINE-5]]:13: note: cannot set 'broadcast_buffers' to false automatically: the construction of 'D' is not visible here
  // CHECK-MESSAGES: :[[@LINE-6]]:13: note: or fuse the forwards into one call
  // CHECK-FIXES: void byReference(DDP &D, torch::Tensor a, torch::Tensor b) {
  (o1 + o2).sum().backward();
}
