// The fix of pytorch/pytorch#39141 that keeps the shared D(fake) forward:
// both losses are backpropagated before either optimiser steps. The
// generator's backward is restricted to the generator's parameters
// (backward's `inputs`), so the discriminator's gradients stay those of its
// own loss; both steps come after the last backward. Trains.
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

#include <cstdio>

struct DiscriminatorImpl : torch::nn::Module {
  DiscriminatorImpl()
      : fc1(register_module("fc1", torch::nn::Linear(16, 32))),
        fc2(register_module("fc2", torch::nn::Linear(32, 1))) {}
  torch::Tensor forward(torch::Tensor x) { return fc2(torch::leaky_relu(fc1(x), 0.2)); }
  torch::nn::Linear fc1;
  torch::nn::Linear fc2;
};
TORCH_MODULE(Discriminator);

int main() {
  auto pg = ddpguard::init_process_group_from_env("gloo");
  torch::manual_seed(0);
  Discriminator netD;
  torch::nn::Sequential generator(torch::nn::Linear(4, 16), torch::nn::Tanh());
  ddpguard::DistributedDataParallel<Discriminator> D(netD, pg);
  torch::optim::Adam optD(D.module()->parameters(), 2e-4);
  torch::optim::Adam optG(generator->parameters(), 2e-4);
  auto paramsG = generator->parameters();
  torch::manual_seed(1830 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    auto real = torch::randn({6, 16});
    auto fake = generator->forward(torch::randn({6, 4}));
    auto realOut = D(real);
    auto fakeOut = D(fake);
    auto lossD =
        torch::binary_cross_entropy_with_logits(realOut, torch::ones_like(realOut)) +
        torch::binary_cross_entropy_with_logits(fakeOut, torch::zeros_like(fakeOut));
    optD.zero_grad();
    lossD.backward({}, /*retain_graph=*/true);
    auto lossG = torch::binary_cross_entropy_with_logits(fakeOut, torch::ones_like(fakeOut));
    optG.zero_grad();
    lossG.backward({}, /*retain_graph=*/false, /*create_graph=*/false, paramsG);
    optD.step();
    optG.step();
    std::printf("rank %d step %d lossD %.4f lossG %.4f\n", pg->getRank(), step,
                lossD.item<float>(), lossG.item<float>());
  }
  return 0;
}
