#include <torch/torch.h>

// SGD's step writes nothing autograd checks: no optimizer the check needs.
void step(torch::nn::Sequential D, torch::Tensor x) {
  torch::optim::SGD opt(D->parameters(), 0.1);
  D(x).mean().backward();
  opt.step();
}
