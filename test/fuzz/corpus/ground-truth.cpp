// Every row of the ground-truth table (docs/ground-truth.md), one function
// each: the five error rows warn, the nine ok rows stay silent.
#include <nets.h>

// D(a), D(b), backward of both: error.
void twoForwardsOneBackward(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg); // row 1
  auto o1 = d(a);
  auto o2 = d(b);
  (o1 + o2).sum().backward();
}

// Same, broadcast_buffers(false): ok.
void broadcastOff(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg, ddpguard::DDPOptions().broadcast_buffers(false));
  auto o1 = d(a);
  auto o2 = d(b);
  (o1 + o2).sum().backward();
}

// Same, module without buffers: ok.
void noBuffers(Plain net, PG pg, torch::Tensor a, torch::Tensor b) {
  ddpguard::DistributedDataParallel<Plain> d(net, pg);
  auto o1 = d(a);
  auto o2 = d(b);
  (o1 + o2).sum().backward();
}

// Same, module in eval mode: error (eval mode does not stop the broadcast).
void evalMode(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  net->eval();
  DDP d(net, pg); // row 4
  auto o1 = d(a);
  auto o2 = d(b);
  (o1 + o2).sum().backward();
}

// o1 = D(a) with grad, D(b) under no_grad, backward of o1: error.
void secondUnderNoGrad(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg); // row 5
  auto o1 = d(a);
  {
    torch::NoGradGuard guard;
    auto o2 = d(b);
  }
  o1.sum().backward();
}

// D(a) under no_grad, o2 = D(b), backward of o2: ok.
void firstUnderNoGrad(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg);
  {
    torch::NoGradGuard guard;
    auto o1 = d(a);
  }
  auto o2 = d(b);
  o2.sum().backward();
}

// D(a) with grad and its output unused, o2 = D(b), backward of o2 only: ok.
void firstOutputUnused(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg);
  d(a);
  auto o2 = d(b);
  o2.sum().backward();
}

// Loop: forward then backward in each iteration: ok.
void forwardBackwardPerIteration(Net net, PG pg, std::vector<torch::Tensor> xs) {
  DDP d(net, pg);
  for (const auto &x : xs) {
    auto loss = d(x).sum();
    loss.backward();
  }
}

// Loop: forward x3 accumulating a loss, one backward after the loop: error.
void accumulateThenBackward(Net net, PG pg, torch::Tensor x) {
  DDP d(net, pg); // row 9
  torch::Tensor loss;
  for (int i = 0; i < 3; ++i)
    loss = loss + d(x).sum();
  loss.backward();
}

// forward, backward, forward, backward: ok.
void alternate(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg);
  d(a).sum().backward();
  d(b).sum().backward();
}

// o1 = D(a), D(b), autograd::grad(o1 ...): error.
void gradThroughFirst(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg); // row 11
  auto o1 = d(a);
  auto o2 = d(b);
  torch::autograd::grad({o1.sum()}, {a});
}

// D(a), o2 = D(b), backward of o2 with retain_graph: ok.
void retainGraphOnSecond(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg);
  auto o1 = d(a);
  auto o2 = d(b);
  o2.sum().backward({}, /*retain_graph=*/true);
}

// o1 = D(a).detach(), o2 = D(b), backward of both: ok.
void detachedFirst(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg);
  auto o1 = d(a).detach();
  auto o2 = d(b);
  (o1 + o2).sum().backward();
}

// o1 = D(a), the inner module called directly (no DDP), backward of o1: ok.
void innerModuleDirectly(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg);
  auto o1 = d(a);
  auto o2 = d.module()(b);
  (o1 + o2).sum().backward();
}
