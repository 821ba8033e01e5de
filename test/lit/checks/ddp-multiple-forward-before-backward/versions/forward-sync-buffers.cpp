// From 2.13 both spellings set the per-forward broadcast; as in PyTorch's DDP
// forward_sync_buffers wins when both are set, and broadcast_buffers alone
// still works as its alias.
// RUN: %check_ddpguard --rules=%S/Inputs/options-ddp.yaml %s %t -- %mock_flags -isystem %inputs/versions/2.13.0 -I%S/Inputs
#include <options-ddp.h>

void newSpellingOff(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  trainer::OptionsDDP<Net> d(net, pg, trainer::SyncOptions().forward_sync_buffers(false));
  auto o1 = d.forward(a);
  auto o2 = d.forward(b);
  (o1 + o2).sum().backward();
}

void aliasOff(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  trainer::OptionsDDP<Net> d(net, pg, trainer::SyncOptions().broadcast_buffers(false));
  auto o1 = d.forward(a);
  auto o2 = d.forward(b);
  (o1 + o2).sum().backward();
}

void newSpellingWins(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  trainer::SyncOptions options;
  options.forward_sync_buffers(true);
  options.broadcast_buffers(false);
  trainer::OptionsDDP<Net> d(net, pg, options);
  // CHECK-FIXES: options.forward_sync_buffers(false);
  auto o1 = d.forward(a);
  auto o2 = d.forward(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd'
  // CHECK-MESSAGES: :[[@LINE-7]]:32: note: 'forward_sync_buffers' is set to true here
  (o1 + o2).sum().backward();
}

void runtimeNewSpelling(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg, ddpguard::DDPOptions().forward_sync_buffers(false));
  auto o1 = d(a);
  auto o2 = d(b);
  (o1 + o2).sum().backward();
}
