// NOLINT and NOLINTNEXTLINE name the check, as clang-tidy's do.
// RUN: %check_ddpguard %s %t -- %mock_flags
#include <torch/torch.h>

void suppressed(torch::nn::Sequential D, torch::Tensor x) {
  torch::optim::Adam opt(D->parameters());
  auto loss = D(x).mean();
  loss.backward({}, true);
  opt.step(); // NOLINT(optimizer-step-before-backward)
  loss.backward();
}

void suppressedNextLine(torch::nn::Sequential D, torch::Tensor x) {
  torch::optim::Adam opt(D->parameters());
  auto loss = D(x).mean();
  loss.backward({}, true);
  // NOLINTNEXTLINE(optimizer-step-before-backward)
  opt.step();
  loss.backward();
}
