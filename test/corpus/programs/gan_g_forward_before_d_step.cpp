// GAN step that scores one batch of fakes twice up front, once detached for
// the discriminator and once for the generator ("one pass over the batch"),
// then updates the discriminator and only then backpropagates the
// generator's loss. No graph is retained: the generator's scores come from
// their own forward, which saved the discriminator's weights (its input
// requires grad), and Adam's optD.step() writes those weights before that
// backward.
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

#include <cstdio>

int main() {
  auto pg = ddpguard::init_process_group_from_env("gloo");
  torch::manual_seed(0);
  torch::nn::Sequential D(torch::nn::Linear(16, 32),
                          torch::nn::LeakyReLU(torch::nn::LeakyReLUOptions().negative_slope(0.2)),
                          torch::nn::Linear(32, 1));
  torch::nn::Sequential G(torch::nn::Linear(4, 32), torch::nn::ReLU(), torch::nn::Linear(32, 16));
  torch::optim::Adam optD(D->parameters(), torch::optim::AdamOptions(2e-4).betas({0.5, 0.999}));
  torch::optim::Adam optG(G->parameters(), torch::optim::AdamOptions(2e-4).betas({0.5, 0.999}));
  torch::manual_seed(1820 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    auto real = torch::randn({8, 16});
    auto fake = G->forward(torch::randn({8, 4}));
    auto genOut = D->forward(fake);
    auto fakeOut = D->forward(fake.detach());
    auto realOut = D->forward(real);
    auto lossD =
        torch::binary_cross_entropy_with_logits(realOut, torch::ones_like(realOut)) +
        torch::binary_cross_entropy_with_logits(fakeOut, torch::zeros_like(fakeOut));
    optD.zero_grad();
    lossD.backward();
    optD.step(); // corpus: expect here
    auto lossG = torch::binary_cross_entropy_with_logits(genOut, torch::ones_like(genOut));
    optG.zero_grad();
    lossG.backward();
    optG.step();
    std::printf("rank %d step %d lossD %.4f lossG %.4f\n", pg->getRank(), step,
                lossD.item<float>(), lossG.item<float>());
  }
  return 0;
}
