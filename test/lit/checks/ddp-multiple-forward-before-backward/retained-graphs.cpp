// Retained graphs: the retained-graph programs of the runtime's detector
// exactness test (test/runtime/detector_exactness_tests.cpp, measured on 2
// ranks: docs/ground-truth.md) and the corpus's retained-graph programs. A
// graph that a backward retains (retain_graph, or create_graph) stays live,
// and a later backward through it fails if a broadcasting forward ran in
// between; the gradients autograd::grad returns carry the graph only with
// create_graph (a gradient penalty's backward traverses the first forward's
// graph again); without retain_graph the graph is freed, and a later
// backward through it fails with another error, which is not this check's.
// RUN: %check_ddpguard %s %t -- %mock_flags
#include <nets.h>

torch::Tensor lossOf(const torch::Tensor &t) { return t.pow(2).mean(); }

// A gradient penalty on the parameters' gradients.
torch::Tensor penaltyOf(const std::vector<torch::Tensor> &grads) {
  torch::Tensor p = torch::zeros({});
  for (const auto &g : grads)
    p = p + g.pow(2).sum();
  return p;
}

// grad_retain_graph_then_forward: error.
void gradRetainThenForward(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg); // grad retain
  // CHECK-FIXES: DDP d(net, pg, ddpguard::DDPOptions().broadcast_buffers(false)); // grad retain
  auto l1 = lossOf(d(a));
  torch::autograd::grad({l1}, net->parameters(), {}, /*retain_graph=*/true);
  d(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: forward call on DDP-wrapped 'd' before the backward of the forward at line [[@LINE-3]]: DDP broadcasts buffers
  // CHECK-MESSAGES: :[[@LINE-4]]:20: note: earlier forward on 'd' is here
  l1.backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:6: note: the backward that fails is here
  // CHECK-MESSAGES: :[[@LINE-9]]:7: note: 'broadcast_buffers' is true by default in this construction of 'd'
}

// grad_retain_graph_no_second_forward: ok.
void gradRetainNoSecondForward(Net net, PG pg, torch::Tensor a) {
  DDP d(net, pg);
  auto l1 = lossOf(d(a));
  torch::autograd::grad({l1}, net->parameters(), {}, /*retain_graph=*/true);
  l1.backward();
}

// grad_create_graph_then_forward: error.
void gradCreateThenForward(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg); // create, loss
  // CHECK-FIXES: DDP d(net, pg, ddpguard::DDPOptions().broadcast_buffers(false)); // create, loss
  auto l1 = lossOf(d(a));
  auto grads = torch::autograd::grad({l1}, net->parameters(), {}, true,
                                     /*create_graph=*/true);
  d(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: forward call on DDP-wrapped 'd' before the backward of the forward at line [[@LINE-4]]: DDP broadcasts buffers
  // CHECK-MESSAGES: :[[@LINE-5]]:20: note: earlier forward on 'd' is here
  l1.backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:6: note: the backward that fails is here
  // CHECK-MESSAGES: :[[@LINE-10]]:7: note: 'broadcast_buffers' is true by default in this construction of 'd'
}

// grad_create_graph_penalty_then_forward: error.
void gradCreatePenaltyThenForward(Net net, PG pg, torch::Tensor a,
                                  torch::Tensor b) {
  DDP d(net, pg); // create, loss and penalty
  // CHECK-FIXES: DDP d(net, pg, ddpguard::DDPOptions().broadcast_buffers(false)); // create, loss and penalty
  auto l1 = lossOf(d(a));
  auto grads = torch::autograd::grad({l1}, net->parameters(), {}, true,
                                     /*create_graph=*/true);
  d(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: forward call on DDP-wrapped 'd' before the backward of the forward at line [[@LINE-4]]: DDP broadcasts buffers
  // CHECK-MESSAGES: :[[@LINE-5]]:20: note: earlier forward on 'd' is here
  (l1 + penaltyOf(grads)).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:27: note: the backward that fails is here
  // CHECK-MESSAGES: :[[@LINE-10]]:7: note: 'broadcast_buffers' is true by default in this construction of 'd'
}

// grad_create_graph_only_penalty_then_forward: error; retain_graph defaults
// to create_graph.
void gradCreateOnlyPenaltyThenForward(Net net, PG pg, torch::Tensor a,
                                      torch::Tensor b) {
  DDP d(net, pg); // create, penalty
  // CHECK-FIXES: DDP d(net, pg, ddpguard::DDPOptions().broadcast_buffers(false)); // create, penalty
  auto l1 = lossOf(d(a));
  auto grads = torch::autograd::grad({l1}, net->parameters(), {}, {},
                                     /*create_graph=*/true);
  d(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: forward call on DDP-wrapped 'd' before the backward of the forward at line [[@LINE-4]]: DDP broadcasts buffers
  // CHECK-MESSAGES: :[[@LINE-5]]:20: note: earlier forward on 'd' is here
  penaltyOf(grads).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:20: note: the backward that fails is here
  // CHECK-MESSAGES: :[[@LINE-10]]:7: note: 'broadcast_buffers' is true by default in this construction of 'd'
}

// grad_create_graph_no_second_forward: ok.
void gradCreateNoSecondForward(Net net, PG pg, torch::Tensor a) {
  DDP d(net, pg);
  auto l1 = lossOf(d(a));
  auto grads = torch::autograd::grad({l1}, net->parameters(), {}, true,
                                     /*create_graph=*/true);
  (l1 + penaltyOf(grads)).backward();
}

// backward_retain_graph_then_forward: error.
void backwardRetainThenForward(Net net, PG pg, torch::Tensor a,
                               torch::Tensor b) {
  DDP d(net, pg); // backward retain
  // CHECK-FIXES: DDP d(net, pg, ddpguard::DDPOptions().broadcast_buffers(false)); // backward retain
  auto l1 = lossOf(d(a));
  l1.backward({}, /*retain_graph=*/true);
  d(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: forward call on DDP-wrapped 'd' before the backward of the forward at line [[@LINE-3]]: DDP broadcasts buffers
  // CHECK-MESSAGES: :[[@LINE-4]]:20: note: earlier forward on 'd' is here
  l1.backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:6: note: the backward that fails is here
  // CHECK-MESSAGES: :[[@LINE-9]]:7: note: 'broadcast_buffers' is true by default in this construction of 'd'
}

// backward_retain_graph_no_second_forward: ok.
void backwardRetainNoSecondForward(Net net, PG pg, torch::Tensor a) {
  DDP d(net, pg);
  auto l1 = lossOf(d(a));
  l1.backward({}, /*retain_graph=*/true);
  l1.backward();
}

// backward_retain_graph_of_second_twice: ok (never stale).
void backwardRetainSecondTwice(Net net, PG pg, torch::Tensor a,
                               torch::Tensor b) {
  DDP d(net, pg);
  d(a);
  auto l2 = lossOf(d(b));
  l2.backward({}, /*retain_graph=*/true);
  l2.backward();
}

// torch::autograd::backward with retain_graph, then the same: error.
void autogradBackwardRetainThenForward(Net net, PG pg, torch::Tensor a,
                                       torch::Tensor b) {
  DDP d(net, pg); // autograd::backward retain
  // CHECK-FIXES: DDP d(net, pg, ddpguard::DDPOptions().broadcast_buffers(false)); // autograd::backward retain
  auto l1 = lossOf(d(a));
  torch::autograd::backward({l1}, {}, /*retain_graph=*/true);
  d(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: forward call on DDP-wrapped 'd' before the backward of the forward at line [[@LINE-3]]: DDP broadcasts buffers
  // CHECK-MESSAGES: :[[@LINE-4]]:20: note: earlier forward on 'd' is here
  torch::autograd::backward({l1});
  // CHECK-MESSAGES: :[[@LINE-1]]:3: note: the backward that fails is here
  // CHECK-MESSAGES: :[[@LINE-9]]:7: note: 'broadcast_buffers' is true by default in this construction of 'd'
}

// Without retain_graph the graph is freed: the later backward fails with
// autograd's "backward through the graph a second time", not this check's.
void gradWithoutRetainThenForward(Net net, PG pg, torch::Tensor a,
                                  torch::Tensor b) {
  DDP d(net, pg);
  auto l1 = lossOf(d(a));
  torch::autograd::grad({l1}, net->parameters());
  d(b);
  l1.backward();
}

// Gradients without create_graph carry no graph: a backward through them
// does not traverse the retained graph (corpus: fgsm_grad_retain_graph).
void gradientsWithoutCreateGraph(Net net, PG pg, torch::Tensor a,
                                 torch::Tensor b) {
  DDP d(net, pg);
  auto l1 = lossOf(d(a));
  auto grads = torch::autograd::grad({l1}, net->parameters(), {},
                                     /*retain_graph=*/true);
  auto l2 = lossOf(d(b));
  (l2 + penaltyOf(grads)).backward();
}

// create_graph with retain_graph false frees the first graph, but the
// gradients' graph saved the same buffers: autograd's in-place error
// (docs/ground-truth.md, measured on 2 ranks).
void createGraphWithoutRetainGraph(Net net, PG pg, torch::Tensor a,
                                   torch::Tensor b) {
  DDP d(net, pg); // create, no retain
  // CHECK-FIXES: DDP d(net, pg, ddpguard::DDPOptions().broadcast_buffers(false)); // create, no retain
  auto l1 = lossOf(d(a));
  auto grads = torch::autograd::grad({l1}, net->parameters(), {}, false,
                                     /*create_graph=*/true);
  auto l2 = lossOf(d(b));
  // CHECK-MESSAGES: :[[@LINE-1]]:20: warning: forward call on DDP-wrapped 'd' before the backward of the forward at line [[@LINE-4]]: DDP broadcasts buffers
  // CHECK-MESSAGES: :[[@LINE-5]]:20: note: earlier forward on 'd' is here
  (l2 + penaltyOf(grads)).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:27: note: the backward that fails is here
  // CHECK-MESSAGES: :[[@LINE-10]]:7: note: 'broadcast_buffers' is true by default in this construction of 'd'
}

// R1 penalty computed before the fake forward, backpropagated alone after
// the fakes' backward (corpus: gan_lazy_r1_penalty_alone): error.
void lazyR1PenaltyAlone(Net net, PG pg, torch::Tensor real,
                        torch::Tensor fake) {
  DDP d(net, pg); // lazy r1
  // CHECK-FIXES: DDP d(net, pg, ddpguard::DDPOptions().broadcast_buffers(false)); // lazy r1
  auto realOut = d(real);
  auto grads = torch::autograd::grad({realOut.sum()}, {real}, {}, true, true);
  auto r1 = grads[0].pow(2).sum();
  auto fakeOut = d(fake);
  // CHECK-MESSAGES: :[[@LINE-1]]:18: warning: forward call on DDP-wrapped 'd' before the backward of the forward at line [[@LINE-4]]: DDP broadcasts buffers
  // CHECK-MESSAGES: :[[@LINE-5]]:18: note: earlier forward on 'd' is here
  lossOf(fakeOut).backward();
  r1.backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:6: note: the backward that fails is here
  // CHECK-MESSAGES: :[[@LINE-11]]:7: note: 'broadcast_buffers' is true by default in this construction of 'd'
}

// The fake scores shared by two updates: the first backward retains their
// graph, the reals are scored and backpropagated, and the generator's loss
// backpropagates through the fake scores again (corpus:
// gan_shared_fake_retain_graph): error.
void sharedFakeScores(Net net, PG pg, torch::Tensor real, torch::Tensor fake) {
  DDP d(net, pg); // shared fake scores
  // CHECK-FIXES: DDP d(net, pg, ddpguard::DDPOptions().broadcast_buffers(false)); // shared fake scores
  auto fakeOut = d(fake);
  lossOf(fakeOut).backward({}, /*retain_graph=*/true);
  auto realOut = d(real);
  // CHECK-MESSAGES: :[[@LINE-1]]:18: warning: forward call on DDP-wrapped 'd' before the backward of the forward at line [[@LINE-3]]: DDP broadcasts buffers
  // CHECK-MESSAGES: :[[@LINE-4]]:18: note: earlier forward on 'd' is here
  lossOf(realOut).backward();
  (fakeOut * -1.0).mean().backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:27: note: the backward that fails is here
  // CHECK-MESSAGES: :[[@LINE-10]]:7: note: 'broadcast_buffers' is true by default in this construction of 'd'
}
