// Siamese network on pairs with a contrastive margin loss: the shared
// DDP tower is called on the left and on the right input.
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

#include <cstdio>

struct TowerImpl : torch::nn::Module {
  TowerImpl()
      : fc1(register_module("fc1", torch::nn::Linear(10, 16))),
        bn(register_module("bn", torch::nn::BatchNorm1d(16))),
        fc2(register_module("fc2", torch::nn::Linear(16, 6))) {}
  torch::Tensor forward(torch::Tensor x) { return fc2(torch::relu(bn(fc1(x)))); }
  torch::nn::Linear fc1;
  torch::nn::BatchNorm1d bn;
  torch::nn::Linear fc2;
};
TORCH_MODULE(Tower);

int main() {
  auto pg = ddpguard::init_process_group_from_env("gloo");
  torch::manual_seed(0);
  Tower tower;
  ddpguard::DistributedDataParallel<Tower> siamese(tower, pg);
  torch::optim::Adam optimizer(siamese.module()->parameters(), 1e-3);
  torch::manual_seed(500 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    auto left = torch::randn({8, 10});
    auto right = torch::randn({8, 10});
    auto same = torch::randint(0, 2, {8}).to(torch::kFloat);
    optimizer.zero_grad();
    auto eLeft = siamese(left);
    auto eRight = siamese(right); // corpus: expect here
    auto distance = torch::pairwise_distance(eLeft, eRight);
    auto loss = (same * distance.pow(2) +
                 (1 - same) * torch::clamp_min(1.0 - distance, 0).pow(2)).mean();
    loss.backward();
    optimizer.step();
    std::printf("rank %d step %d loss %.4f\n", pg->getRank(), step, loss.item<float>());
  }
  return 0;
}
