// The broadcast fix writes the setter of the version judged by: before 2.13
// broadcast_buffers(false), from 2.13 forward_sync_buffers(false), as the
// rule's 'renamed' says. Each fixed file compiles against that version.
// RUN: %check_ddpguard --rules=%S/Inputs/options-ddp.yaml --check-suffix=OLD %s %t.a -- %mock_flags -isystem %inputs/versions/2.12.1 -I%S/Inputs
// RUN: %check_ddpguard --rules=%S/Inputs/options-ddp.yaml --check-suffix=NEW %s %t.b -- %mock_flags -isystem %inputs/versions/2.13.0 -I%S/Inputs
// RUN: %check_ddpguard --rules=%S/Inputs/options-ddp.yaml --check-suffix=NEW %s %t.c -- %mock_flags -isystem %inputs/versions/2.15.0 -I%S/Inputs
#include <options-ddp.h>

void step(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  trainer::OptionsDDP<Net> d(net, pg);
  // CHECK-FIXES-OLD: trainer::OptionsDDP<Net> d(net, pg, trainer::SyncOptions().broadcast_buffers(false));
  // CHECK-FIXES-NEW: trainer::OptionsDDP<Net> d(net, pg, trainer::SyncOptions().forward_sync_buffers(false));
  auto o1 = d.forward(a);
  auto o2 = d.forward(b);
  // CHECK-MESSAGES-OLD: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd'
  // CHECK-MESSAGES-OLD: :[[@LINE-6]]:28: note: 'broadcast_buffers' is true by default in this construction of 'd'
  // CHECK-MESSAGES-OLD: :[[@LINE-3]]:13: note: the fix sets 'broadcast_buffers' to false, which changes behaviour
  // CHECK-MESSAGES-NEW: :[[@LINE-4]]:13: warning: forward call on DDP-wrapped 'd'
  // CHECK-MESSAGES-NEW: :[[@LINE-9]]:28: note: 'forward_sync_buffers' is true by default in this construction of 'd'
  // CHECK-MESSAGES-NEW: :[[@LINE-6]]:13: note: the fix sets 'forward_sync_buffers' to false, which changes behaviour
  (o1 + o2).sum().backward();
}
