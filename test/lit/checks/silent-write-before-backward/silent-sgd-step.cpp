// LibTorch's SGD steps through p.data(), whose version counter is a new
// one: D's SGD step before G's backward through D(fake) raises nothing and
// G's gradients come from D's updated weights. Labelled by running
// test/silent-cpp/silent_writes.cpp on LibTorch 2.11.0 and 2.15.0: sgd-step
// silent, adam-step raises (optimizer-step-before-backward), step-after
// trains.
// RUN: %check_ddpguard --unfixed %s %t -- %mock_flags
#include <torch/torch.h>

void sgdStep(torch::nn::Linear G, torch::nn::Sequential D, torch::Tensor real) {
  torch::optim::SGD optD(D->parameters(), 0.1);
  auto fake = G(torch::randn({5, 4}));
  auto dFake = D(fake);
  auto lossD = dFake.mean() - D(real).mean();
  lossD.backward({}, /*retain_graph=*/true);
  optD.step();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step of 'optD' (torch::optim::SGD) writes the parameters of 'D' in place, which the forward at line [[@LINE-4]] saved for backward; it writes through p.data(), which does not bump the version counter, so the backward at line [[@LINE+5]] raises nothing and computes gradients from values the forward did not see [silent-write-before-backward]
  // CHECK-MESSAGES: :[[@LINE-5]]:16: note: forward on 'D' is here; it saved the parameters of 'D' for backward
  // CHECK-MESSAGES: :[[@LINE+3]]:16: note: this backward reads the written values without an error
  // CHECK-MESSAGES: :[[@LINE-4]]:3: note: no fix is offered: moving the step after the backward would make it use that backward's gradients too, and recomputing the forward after the step would change what the later loss sees; both change what training computes
  // CHECK-MESSAGES: :[[@LINE-5]]:3: note: on every supported LibTorch: autograd sees no write that leaves the version counter as it was (measured on 2.11.0 and 2.15.0, test/silent-cpp)
  dFake.mean().backward();
}

void stepAfter(torch::nn::Linear G, torch::nn::Sequential D, torch::Tensor real) {
  torch::optim::SGD optD(D->parameters(), 0.1);
  auto fake = G(torch::randn({5, 4}));
  auto dFake = D(fake);
  auto lossD = dFake.mean() - D(real).mean();
  lossD.backward({}, /*retain_graph=*/true);
  dFake.mean().backward();
  optD.step();
}

// Every iteration's SGD step writes what the next iteration's forward
// saves only after that forward: nothing is stale.
void sgdLoop(torch::nn::Sequential D, torch::Tensor x, int steps) {
  torch::optim::SGD optD(D->parameters(), 0.1);
  for (int i = 0; i < steps; ++i) {
    optD.zero_grad();
    D(x).mean().backward();
    optD.step();
  }
}
