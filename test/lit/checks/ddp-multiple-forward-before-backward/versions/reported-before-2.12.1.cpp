// Before LibTorch 2.12.1 the per-forward broadcast bumps the buffers' version
// counters: two forwards before one backward fail, and the report names the
// version it judged by and the upgrade as a fix.
// RUN: %check_ddpguard %s %t.a -- %mock_flags -isystem %inputs/versions/2.11.2
// RUN: %check_ddpguard %s %t.b -- %mock_flags -isystem %inputs/versions/2.12.0
#include <nets.h>

void twoForwards(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg);
  // CHECK-FIXES: DDP d(net, pg, ddpguard::DDPOptions().broadcast_buffers(false));
  auto o1 = d(a);
  auto o2 = d(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd' before the backward of the forward at line [[@LINE-2]]: DDP broadcasts buffers before every forward
  // CHECK-MESSAGES: :[[@LINE-2]]:13: note: the fix sets 'broadcast_buffers' to false, which changes behaviour
  // CHECK-MESSAGES: :[[@LINE-3]]:13: note: judged by LibTorch {{2\.11\.2|2\.12\.0}}, from <torch/version.h>{{$}}
  // CHECK-MESSAGES: :[[@LINE-4]]:13: note: or build against LibTorch 2.12.1 or later: there 'ddpguard::DistributedDataParallel' puts the buffers' version counters back after its broadcast, as PyTorch's DDP does, and these forwards no longer fail{{$}}
  (o1 + o2).sum().backward();
}
