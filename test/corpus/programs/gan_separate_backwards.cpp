// DCGAN's reference recipe: the discriminator's loss on real images is
// backpropagated before the fakes are scored, and the gradients of the two
// backwards accumulate before one optimizer step.
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

#include <cstdio>

struct DiscriminatorImpl : torch::nn::Module {
  DiscriminatorImpl()
      : conv(register_module("conv", torch::nn::Conv2d(1, 8, 3))),
        bn(register_module("bn", torch::nn::BatchNorm2d(8))),
        head(register_module("head", torch::nn::Linear(8, 1))) {}
  torch::Tensor forward(torch::Tensor x) {
    auto h = torch::leaky_relu(bn(conv(x)), 0.2);
    return head(h.mean({2, 3}));
  }
  torch::nn::Conv2d conv;
  torch::nn::BatchNorm2d bn;
  torch::nn::Linear head;
};
TORCH_MODULE(Discriminator);

struct GeneratorImpl : torch::nn::Module {
  GeneratorImpl()
      : fc(register_module("fc", torch::nn::Linear(4, 64))),
        bn(register_module("bn", torch::nn::BatchNorm1d(64))) {}
  torch::Tensor forward(torch::Tensor z) {
    return torch::tanh(bn(fc(z))).view({-1, 1, 8, 8});
  }
  torch::nn::Linear fc;
  torch::nn::BatchNorm1d bn;
};
TORCH_MODULE(Generator);

int main() {
  auto pg = ddpguard::init_process_group_from_env("gloo");
  torch::manual_seed(0);
  Discriminator netD;
  Generator netG;
  ddpguard::DistributedDataParallel<Discriminator> D(netD, pg);
  ddpguard::DistributedDataParallel<Generator> G(netG, pg);
  torch::optim::Adam optD(D.module()->parameters(), 2e-4);
  torch::optim::Adam optG(G.module()->parameters(), 2e-4);
  torch::manual_seed(610 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    auto real = torch::randn({4, 1, 8, 8});
    optD.zero_grad();
    auto realOut = D(real);
    auto lossReal =
        torch::binary_cross_entropy_with_logits(realOut, torch::ones_like(realOut));
    lossReal.backward();
    auto fake = G(torch::randn({4, 4}));
    auto fakeOut = D(fake.detach());
    auto lossFake =
        torch::binary_cross_entropy_with_logits(fakeOut, torch::zeros_like(fakeOut));
    lossFake.backward();
    optD.step();
    optG.zero_grad();
    auto genOut = D(fake);
    auto lossG = torch::binary_cross_entropy_with_logits(genOut, torch::ones_like(genOut));
    lossG.backward();
    optG.step();
    std::printf("rank %d step %d lossD %.4f lossG %.4f\n", pg->getRank(), step,
                (lossReal + lossFake).item<float>(), lossG.item<float>());
  }
  return 0;
}
