// GAN discriminator step that scores real and detached fake images in one
// batch (one forward), then the generator step with its own forward.
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

int main() {
  auto pg = ddpguard::init_process_group_from_env("gloo");
  torch::manual_seed(0);
  Discriminator netD;
  torch::nn::Sequential generator(torch::nn::Linear(4, 64), torch::nn::Tanh());
  ddpguard::DistributedDataParallel<Discriminator> D(netD, pg);
  torch::optim::Adam optD(D.module()->parameters(), 2e-4);
  torch::optim::Adam optG(generator->parameters(), 2e-4);
  torch::manual_seed(620 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    auto real = torch::randn({4, 1, 8, 8});
    auto fake = generator->forward(torch::randn({4, 4})).view({4, 1, 8, 8});
    optD.zero_grad();
    auto scores = D(torch::cat({real, fake.detach()}));
    auto labels = torch::cat({torch::ones({4, 1}), torch::zeros({4, 1})});
    auto lossD = torch::binary_cross_entropy_with_logits(scores, labels);
    lossD.backward();
    optD.step();
    optG.zero_grad();
    auto genOut = D(fake);
    auto lossG = torch::binary_cross_entropy_with_logits(genOut, torch::ones_like(genOut));
    lossG.backward();
    optG.step();
    std::printf("rank %d step %d lossD %.4f lossG %.4f\n", pg->getRank(), step,
                lossD.item<float>(), lossG.item<float>());
  }
  return 0;
}
