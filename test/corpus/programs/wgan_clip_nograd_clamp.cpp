// WGAN with weight clipping where the critic's scores of the fakes are
// shared between the critic's and the generator's losses: the critic's loss
// is backpropagated with retain_graph=true, the critic steps and its weights
// are clipped, and then the generator's loss backpropagates through the same
// C(fake) forward. The critic's optimiser is torch::optim::SGD, whose
// LibTorch step does not bump version counters, so the only write that
// matters is the clipping: `p.clamp_()` under NoGradGuard bumps each
// parameter's version, and the C(fake) forward saved the critic's weights.
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
  torch::manual_seed(1850 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    auto real = torch::randn({8, 16});
    auto fake = generator->forward(torch::randn({8, 4}));
    auto fakeScore = critic->forward(fake);
    auto realScore = critic->forward(real);
    auto lossC = fakeScore.mean() - realScore.mean();
    optC.zero_grad();
    lossC.backward({}, /*retain_graph=*/true);
    optC.step();
    {
      torch::NoGradGuard noGrad;
      for (auto &p : critic->parameters())
        p.clamp_(-clip, clip); // corpus: expect here
    }
    auto lossG = -fakeScore.mean();
    optG.zero_grad();
    lossG.backward();
    optG.step();
    std::printf("rank %d step %d lossC %.4f lossG %.4f\n", pg->getRank(), step,
                lossC.item<float>(), lossG.item<float>());
  }
  return 0;
}
