#include <torch/torch.h>

void step(torch::nn::Sequential D, torch::Tensor x) {
  torch::optim::Adam opt(D->parameters());
  auto loss = D(x).mean();
  loss.backward({}, true);
  opt.step();
  loss.backward();
}
