// gan_shared_fake_retain_graph with buffers broadcast once per backward
// (BufferBroadcast::kOncePerBackward): the policy broadcasts again at the
// first forward after a backward that reached the parameters, so scoring the
// reals after the retained fake backward still overwrites the buffers the
// fake scores' retained graph saved for the generator's backward.
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

#include <cstdio>

struct DiscriminatorImpl : torch::nn::Module {
  DiscriminatorImpl()
      : fc1(register_module("fc1", torch::nn::Linear(16, 32))),
        bn(register_module("bn", torch::nn::BatchNorm1d(32))),
        fc2(register_module("fc2", torch::nn::Linear(32, 1))) {}
  torch::Tensor forward(torch::Tensor x) {
    return fc2(torch::leaky_relu(bn(fc1(x)), 0.2));
  }
  torch::nn::Linear fc1;
  torch::nn::BatchNorm1d bn;
  torch::nn::Linear fc2;
};
TORCH_MODULE(Discriminator);

int main() {
  auto pg = ddpguard::init_process_group_from_env("gloo");
  torch::manual_seed(0);
  Discriminator netD;
  torch::nn::Linear generator(4, 16);
  ddpguard::DistributedDataParallel<Discriminator> D(
      netD, pg,
      ddpguard::DDPOptions().buffer_broadcast(
          ddpguard::BufferBroadcast::kOncePerBackward));
  torch::optim::Adam optD(D.module()->parameters(), 1e-4);
  torch::optim::Adam optG(generator->parameters(), 1e-4);
  torch::manual_seed(700 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    auto real = torch::randn({6, 16});
    auto fake = generator(torch::randn({6, 4}));
    optD.zero_grad();
    optG.zero_grad();
    auto fakeOut = D(fake);
    auto lossFake = torch::softplus(fakeOut).mean();
    lossFake.backward({}, /*retain_graph=*/true);
    auto realOut = D(real); // corpus: expect here
    auto lossReal = torch::softplus(-realOut).mean();
    lossReal.backward();
    auto lossG = torch::softplus(-fakeOut).mean();
    lossG.backward();
    optD.step();
    optG.step();
    std::printf("rank %d step %d lossD %.4f lossG %.4f\n", pg->getRank(), step,
                (lossFake + lossReal).item<float>(), lossG.item<float>());
  }
  return 0;
}
