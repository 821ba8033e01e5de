// wgan_gp with buffers broadcast once per backward
// (BufferBroadcast::kOncePerBackward): only the first of the three forwards
// broadcasts; autograd::grad accumulates into no parameter, so it does not
// re-arm the broadcast, and the one backward of the whole critic loss finds
// every saved buffer intact.
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

#include <cstdio>

struct CriticImpl : torch::nn::Module {
  CriticImpl()
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
TORCH_MODULE(Critic);

int main() {
  auto pg = ddpguard::init_process_group_from_env("gloo");
  torch::manual_seed(0);
  Critic critic;
  torch::nn::Linear generator(4, 16);
  ddpguard::DistributedDataParallel<Critic> C(
      critic, pg,
      ddpguard::DDPOptions().buffer_broadcast(
          ddpguard::BufferBroadcast::kOncePerBackward));
  torch::optim::Adam optC(C.module()->parameters(), 1e-4);
  torch::manual_seed(690 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    auto real = torch::randn({6, 16});
    auto fake = generator(torch::randn({6, 4})).detach();
    optC.zero_grad();
    auto realScore = C(real);
    auto fakeScore = C(fake);
    auto eps = torch::rand({6, 1});
    auto mixed = (eps * real + (1 - eps) * fake).requires_grad_(true);
    auto mixedScore = C(mixed);
    auto grads = torch::autograd::grad({mixedScore.sum()}, {mixed}, {},
                                       /*retain_graph=*/true, /*create_graph=*/true);
    auto penalty = (grads[0].norm(2, 1) - 1).pow(2).mean();
    auto lossC = fakeScore.mean() - realScore.mean() + 10 * penalty;
    lossC.backward();
    optC.step();
    std::printf("rank %d step %d lossC %.4f\n", pg->getRank(), step, lossC.item<float>());
  }
  return 0;
}
