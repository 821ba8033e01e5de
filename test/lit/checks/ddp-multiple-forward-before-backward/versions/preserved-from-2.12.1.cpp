// From LibTorch 2.12.1 ddpguard's runtime, as PyTorch's DDP, puts the buffers'
// version counters back after the broadcast: every error row of the ground
// truth (docs/ground-truth.md) trains, and the checker is silent on them.
// RUN: %check_ddpguard %s %t.a -- %mock_flags -isystem %inputs/versions/2.12.1
// RUN: %check_ddpguard %s %t.b -- %mock_flags -isystem %inputs/versions/2.13.0
// RUN: %check_ddpguard %s %t.c -- %mock_flags -isystem %inputs/versions/2.15.0
#include <nets.h>

void twoForwardsOneBackward(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg);
  auto o1 = d(a);
  auto o2 = d(b);
  (o1 + o2).sum().backward();
}

void evalMode(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  net->eval();
  DDP d(net, pg);
  auto o1 = d(a);
  auto o2 = d(b);
  (o1 + o2).sum().backward();
}

void secondUnderNoGrad(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg);
  auto o1 = d(a);
  {
    torch::NoGradGuard guard;
    auto o2 = d(b);
  }
  o1.sum().backward();
}

void accumulateThenBackward(Net net, PG pg, torch::Tensor x) {
  DDP d(net, pg);
  torch::Tensor loss;
  for (int i = 0; i < 3; ++i)
    loss = loss + d(x).sum();
  loss.backward();
}

void gradThroughFirst(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg);
  auto o1 = d(a);
  auto o2 = d(b);
  torch::autograd::grad({o1.sum()}, {a});
}

void customBuffer(Counting net, PG pg, torch::Tensor a, torch::Tensor b) {
  ddpguard::DistributedDataParallel<Counting> d(net, pg);
  auto o1 = d(a);
  auto o2 = d(b);
  (o1 * o2).sum().backward();
}
