// LibTorch's SGD updates the parameters through p.data(), whose version
// counter is a new one: its step between a forward and the backward through
// it bumps nothing, and that backward runs (with the new weights: docs/
// ground-truth.md, "Optimizer steps and version counters"). Python's SGD
// does bump them; this is the C++ check. silent-write-before-backward
// reports the step (test/silent-cpp: sgd-step is silent).
// RUN: %check_ddpguard --unfixed %s %t -- %mock_flags
#include <torch/torch.h>

void sgdStep(torch::nn::Sequential D, torch::Tensor real, torch::Tensor fake) {
  torch::optim::SGD optD(D->parameters(), 0.01);
  auto dFake = D(fake);
  auto lossD = D(real).mean() - dFake.mean();
  lossD.backward({}, /*retain_graph=*/true);
  optD.step();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step of 'optD' (torch::optim::SGD) writes the parameters of 'D' in place{{.*}}[silent-write-before-backward]
  dFake.mean().backward();
}
