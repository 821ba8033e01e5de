// wgan_clip_nograd_clamp with the clipping written as in the WGAN reference
// code (`p.data.clamp_(-c, c)`): `p.data().clamp_()` writes the weights
// through a tensor that shares their storage but not their version counter,
// so no version is bumped and the generator's backward through the earlier
// C(fake) forward runs (with the clipped weights). The critic's optimiser is
// LibTorch's SGD, which does not bump either. Trains.
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

#include <cstdio>

int main() {
  auto pg = ddpguard::init_process_group_from_env("gloo");
  torch::manual_seed(0);
  torch::nn::Sequential critic(torch::nn::Linear(16, 32),
                               torch::nn::LeakyReLU(torch::nn::LeakyReLUOptions().negative_slope(0.2)),
                               torch::nn::Linear(32, 1));
  torch::nn::Sequential generator(torch::nn::Linear(4, 32), torch::nn::ReLU(), torch::nn::Linear(32, 16));
  torch::optim::SGD optC(critic->parameters(), 5e-3);
  torch::optim::RMSprop optG(generator->parameters(), 5e-5);
  const double clip = 0.01;
  torch::manual_seed(1860 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    auto real = torch::randn({8, 16});
    auto fake = generator->forward(torch::randn({8, 4}));
    auto fakeScore = critic->forward(fake);
    auto realScore = critic->forward(real);
    auto lossC = fakeScore.mean() - realScore.mean();
    optC.zero_grad();
    lossC.backward({}, /*retain_graph=*/true);
    optC.step();
    for (auto &p : critic->parameters())
      p.data().clamp_(-clip, clip);
    auto lossG = -fakeScore.mean();
    optG.zero_grad();
    lossG.backward();
    optG.step();
    std::printf("rank %d step %d lossC %.4f lossG %.4f\n", pg->getRank(), step,
                lossC.item<float>(), lossG.item<float>());
  }
  return 0;
}
