// GAN step that reuses the discriminator's scores of the fakes for the
// generator's loss (pytorch/pytorch#39141; the same error is reported in
// many GAN repositories): the DDP discriminator scores the reals and the
// non-detached fakes, its loss is backpropagated with retain_graph=true, and
// optD.step() runs before the generator's loss backpropagates through the
// same D(fake) forward. Adam writes the discriminator's weights in place,
// and that forward saved them (its input, the fakes, requires grad).
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
  torch::manual_seed(1800 + pg->getRank());
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
    lossG.backward();
    optG.step();
    std::printf("rank %d step %d lossD %.4f lossG %.4f\n", pg->getRank(), step,
                lossD.item<float>(), lossG.item<float>());
  }
  return 0;
}
