// The once-per-backward policy (BufferBroadcast::kOncePerBackward) as the
// runtime applies it: buffers are broadcast at the first grad-mode forward
// after a backward that reached the parameters, and autograd::grad reaches
// none. Findings that the policy does not remove get no once-per-backward
// fix, with the forward that would still broadcast named.
// RUN: %check_ddpguard --fix-mode=once-per-backward --unfixed %s %t -- %mock_flags
#include <nets.h>

// The policy broadcasts again at the first forward after a backward that
// reached the parameters. A retained graph still needed after such a backward
// is overwritten then: reported for an object that has the policy, and no
// once-per-backward fix for one that does not (corpus
// gan_shared_fake_retain_graph; docs/ground-truth.md).
void retainedFakeWithPolicy(Net net, PG pg, torch::Tensor fake,
                            torch::Tensor real) {
  DDP d(net, pg,
        ddpguard::DDPOptions().buffer_broadcast(
            ddpguard::BufferBroadcast::kOncePerBackward));
  auto fakeOut = d(fake);
  fakeOut.sum().backward({}, /*retain_graph=*/true);
  auto realOut = d(real);
  // CHECK-MESSAGES: :[[@LINE-1]]:18: warning: forward call on DDP-wrapped 'd' before the backward of the forward at line [[@LINE-3]]: DDP broadcasts buffers at the first forward after a backward and overwrites the buffers that forward saved for backward
  // CHECK-MESSAGES: :[[@LINE-2]]:18: note: cannot broadcast buffers once per backward automatically: 'd' broadcasts buffers once per backward already
  realOut.sum().backward();
  fakeOut.mean().backward();
}

void retainedFakeWithoutPolicy(Net net, PG pg, torch::Tensor fake,
                               torch::Tensor real) {
  DDP d(net, pg);
  auto fakeOut = d(fake);
  fakeOut.sum().backward({}, /*retain_graph=*/true);
  auto realOut = d(real);
  // CHECK-MESSAGES: :[[@LINE-1]]:18: warning: forward call on DDP-wrapped 'd' before the backward of the forward at line [[@LINE-3]]: DDP broadcasts buffers before every forward
  // CHECK-MESSAGES: :[[@LINE-2]]:18: note: cannot broadcast buffers once per backward automatically: the forward at line [[@LINE-2]] runs after a backward, so it would still broadcast over buffers that the backward at line [[@LINE+3]] needs{{$}}
  // CHECK-MESSAGES-NOT: note: the fix broadcasts buffers once per backward
  realOut.sum().backward();
  fakeOut.mean().backward();
}

// A forward per iteration of a loop before one backward: the iterations after
// the first do not broadcast, and the first finds no graph of the loop live
// (corpus rnn_cell_per_step). A graph retained over the backward before the
// loop is still overwritten by the loop's first forward.
void perIterationWithPolicy(Net net, PG pg, std::vector<torch::Tensor> steps) {
  DDP d(net, pg,
        ddpguard::DDPOptions().buffer_broadcast(
            ddpguard::BufferBroadcast::kOncePerBackward));
  torch::Tensor loss;
  for (const auto &x : steps)
    loss = loss + d(x).sum();
  loss.backward();
}

void retainedBeforeTheLoop(Net net, PG pg, torch::Tensor fake,
                           std::vector<torch::Tensor> steps) {
  DDP d(net, pg,
        ddpguard::DDPOptions().buffer_broadcast(
            ddpguard::BufferBroadcast::kOncePerBackward));
  auto fakeOut = d(fake);
  fakeOut.sum().backward({}, /*retain_graph=*/true);
  torch::Tensor loss;
  for (const auto &x : steps)
    loss = loss + d(x).sum();
  // CHECK-MESSAGES: :[[@LINE-1]]:19: warning: forward call on DDP-wrapped 'd' before the backward of the forward at line [[@LINE-5]]: DDP broadcasts buffers at the first forward after a backward
  (loss + fakeOut.sum()).backward();
}

// autograd::grad accumulates into no parameter, so it does not re-arm the
// policy: a gradient penalty's forwards share one broadcast (corpus wgan_gp).
void penaltyWithPolicy(Net net, PG pg, torch::Tensor real, torch::Tensor mixed) {
  DDP d(net, pg,
        ddpguard::DDPOptions().buffer_broadcast(
            ddpguard::BufferBroadcast::kOncePerBackward));
  auto realOut = d(real);
  auto mixedOut = d(mixed);
  auto grads = torch::autograd::grad({mixedOut.sum()}, {mixed}, {},
                                     /*retain_graph=*/true,
                                     /*create_graph=*/true);
  auto realAgain = d(real);
  (realOut.sum() + grads[0].sum() + realAgain.sum()).backward();
}
