// StyleGAN2-style lazy R1 regularisation that reuses the real scores of the
// main discriminator step "to save a forward": the main loss is
// backpropagated with retain_graph=true and Adam steps, then, every other
// step, the R1 penalty differentiates those real scores with respect to the
// real images (create_graph=true). That gradient runs through the real
// forward, which saved the discriminator's weights (the reals require grad),
// after optD.step() wrote them.
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

#include <cstdio>

int main() {
  auto pg = ddpguard::init_process_group_from_env("gloo");
  torch::manual_seed(0);
  torch::nn::Sequential D(torch::nn::Linear(16, 32),
                          torch::nn::LeakyReLU(torch::nn::LeakyReLUOptions().negative_slope(0.2)),
                          torch::nn::Linear(32, 1));
  torch::nn::Linear generator(4, 16);
  torch::optim::Adam optD(D->parameters(), torch::optim::AdamOptions(2e-3).betas({0.0, 0.99}));
  const int r1Interval = 2;
  const double gamma = 10.0;
  torch::manual_seed(1870 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    auto real = torch::randn({8, 16}).requires_grad_(true);
    auto fake = generator(torch::randn({8, 4})).detach();
    auto realOut = D->forward(real);
    auto fakeOut = D->forward(fake);
    auto lossD = torch::softplus(fakeOut).mean() + torch::softplus(-realOut).mean();
    optD.zero_grad();
    lossD.backward({}, /*retain_graph=*/true);
    optD.step(); // corpus: expect here
    if (step % r1Interval == 0) {
      auto grads = torch::autograd::grad({realOut.sum()}, {real}, {},
                                         /*retain_graph=*/true, /*create_graph=*/true);
      auto r1 = grads[0].pow(2).sum(1).mean();
      optD.zero_grad();
      (gamma / 2 * r1 * r1Interval).backward();
      optD.step();
    }
    std::printf("rank %d step %d lossD %.4f\n", pg->getRank(), step, lossD.item<float>());
  }
  return 0;
}
