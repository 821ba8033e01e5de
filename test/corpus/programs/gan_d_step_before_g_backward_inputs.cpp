// The GAN step of gan_d_step_before_g_backward, with the generator's
// backward restricted to the generator's parameters (backward's `inputs`):
// optD.step() still writes the discriminator's weights that D(fake) saved,
// so the backward through it fails; since that backward accumulates into no
// parameter of D, the step can move after it without changing what either
// computes (optimizer-step-before-backward's fix).
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
  std::vector<torch::Tensor> paramsG = generator->parameters();
  torch::manual_seed(1870 + pg->getRank());
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
    optD.step(); // corpus: expect here
    auto lossG = torch::binary_cross_entropy_with_logits(fakeOut, torch::ones_like(fakeOut));
    optG.zero_grad();
    lossG.backward({}, /*retain_graph=*/false, /*create_graph=*/false, paramsG);
    optG.step();
    std::printf("rank %d step %d lossD %.4f lossG %.4f\n", pg->getRank(), step,
                lossD.item<float>(), lossG.item<float>());
  }
  return 0;
}
