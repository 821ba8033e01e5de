// --fix-mode=fuse where only some of the forwards of a hazard can be fused:
// a forward left outside the fused call would still broadcast over the
// buffers the fused forward saved, so no fuse fix is offered, and the
// diagnostic says why. (Forwards in one block with statements between them
// are brought together where that is safe: fuse-reorder.cpp.)
// RUN: %check_ddpguard --fix-mode=fuse --unfixed %s %t -- %mock_flags
#include <nets.h>

void thirdInAnotherBlock(Net net, PG pg, torch::Tensor a, torch::Tensor b,
                         bool mix) {
  DDP d(net, pg);
  auto o1 = d(a);
  auto o2 = d(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd' before the backward of the forward at line [[@LINE-2]]:
  // CHECK-MESSAGES: :[[@LINE-2]]:13: note: cannot fuse the forwards: the forward at line [[@LINE+4]] cannot join the fused forwards and would still overwrite the buffers they saved
  // CHECK-FIXES: {{^}}  auto o2 = d(b);{{$}}
  torch::Tensor o3 = a;
  if (mix)
    o3 = d(a + b);
  // CHECK-MESSAGES: :[[@LINE-1]]:10: warning: forward call on DDP-wrapped 'd' before the backward of the forward at line [[@LINE-8]]:
  // CHECK-MESSAGES: :[[@LINE-2]]:10: note: cannot fuse the forwards: the forward at line [[@LINE-2]] is not a statement in a block that stores one output{{$}}
  (o1 + o2 + o3).sum().backward();
}
