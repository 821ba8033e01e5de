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
