// A step after the last backward through the forwards that saved the
// parameters writes nothing a backward still needs.
// RUN: %check_ddpguard %s %t -- %mock_flags
#include <torch/torch.h>

void stepLast(torch::nn::Sequential D, torch::Tensor real, torch::Tensor fake) {
  torch::optim::Adam optD(D->parameters());
  auto dFake = D(fake);
  auto lossD = D(real).mean() - dFake.mean();
  lossD.backward({}, /*retain_graph=*/true);
  dFake.mean().backward();
  optD.step();
}

// One forward, backward and step per iteration: each step follows the last
// backward through its iteration's graph.
void perIteration(torch::nn::Sequential D, std::vector<torch::Tensor> batches) {
  torch::optim::AdamW opt(D->parameters());
  for (const auto &batch : batches) {
    opt.zero_grad();
    D(batch).mean().backward();
    opt.step();
  }
}

// The step writes the generator's parameters; the graph of D saved D's.
void otherModule(torch::nn::Sequential G, torch::nn::Sequential D,
                 torch::Tensor real) {
  torch::optim::Adam optG(G->parameters());
  auto dReal = D(real);
  dReal.mean().backward({}, /*retain_graph=*/true);
  optG.step();
  dReal.mean().backward();
}
