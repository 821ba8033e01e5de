// An escape flows only into calls that run after it: the notes name the
// escape after the first forward and a read after that escape, never the
// call that runs before it.
// RUN: %check_ddpguard %s %t -- %mock_flags
#include <nets.h>

torch::Tensor fetch();
void keep(const torch::Tensor &);

void step(Net net, PG pg, torch::Tensor a) {
  DDP ddp(net, pg);
  // CHECK-FIXES: {{^}}  DDP ddp(net, pg, ddpguard::DDPOptions().broadcast_buffers(false));{{$}}
  auto x = fetch();
  auto o1 = ddp(a + x);
  keep(o1);
  auto o2 = ddp(a);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'ddp' before the backward of the forward at line [[@LINE-3]]:
  // CHECK-MESSAGES: :[[@LINE+4]]:12: note: assuming that this call, whose body is not visible, may return the history of values that escaped earlier
  // CHECK-MESSAGES: :[[@LINE-4]]:3: note: a value derived from a forward escapes here, into code the checker cannot see
  // CHECK-MESSAGES-NOT: :[[@LINE-8]]:{{[0-9]+}}: note: assuming
  // The escape reaches the backward only through this read.
  auto y = fetch();
  (o2 + y).sum().backward();
}
