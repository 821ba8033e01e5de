// StyleGAN2-style lazy R1 regularisation: the real scores are differentiated
// with respect to the real images (create_graph=true), the fakes are scored
// and their loss backpropagated, and the R1 penalty is backpropagated on its
// own last: its graph runs through the real forward's saved buffers again.
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
  ddpguard::DistributedDataParallel<Discriminator> D(netD, pg);
  torch::optim::Adam optD(D.module()->parameters(), 1e-4);
  torch::manual_seed(670 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    auto real = torch::randn({6, 16}).requires_grad_(true);
    auto fake = generator(torch::randn({6, 4})).detach();
    optD.zero_grad();
    auto realOut = D(real);
    auto grads = torch::autograd::grad({realOut.sum()}, {real}, {},
                                       /*retain_graph=*/true, /*create_graph=*/true);
    auto r1 = 5 * grads[0].pow(2).sum(1).mean();
    auto fakeOut = D(fake); // corpus: expect here
    auto lossFake = torch::softplus(fakeOut).mean();
    lossFake.backward();
    r1.backward();
    optD.step();
    std::printf("rank %d step %d lossFake %.4f r1 %.4f\n", pg->getRank(), step,
                lossFake.item<float>(), r1.item<float>());
  }
  return 0;
}
