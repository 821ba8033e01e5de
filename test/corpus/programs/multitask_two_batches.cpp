// Multi-task training on a shared backbone: a batch from task A and a batch
// from task B, one forward each, losses added, one backward.
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

#include <cstdio>

struct NetImpl : torch::nn::Module {
  NetImpl()
      : fc1(register_module("fc1", torch::nn::Linear(8, 16))),
        bn(register_module("bn", torch::nn::BatchNorm1d(16))),
        fc2(register_module("fc2", torch::nn::Linear(16, 5))) {}
  torch::Tensor forward(torch::Tensor x) { return fc2(torch::relu(bn(fc1(x)))); }
  torch::nn::Linear fc1;
  torch::nn::BatchNorm1d bn;
  torch::nn::Linear fc2;
};
TORCH_MODULE(Net);

int main() {
  auto pg = ddpguard::init_process_group_from_env("gloo");
  torch::manual_seed(0);
  Net net;
  ddpguard::DistributedDataParallel<Net> backbone(net, pg);
  torch::nn::Linear headA(5, 3), headB(5, 1);
  auto params = backbone.module()->parameters();
  for (auto &p : headA->parameters())
    params.push_back(p);
  for (auto &p : headB->parameters())
    params.push_back(p);
  torch::optim::Adam optimizer(params, 1e-3);
  torch::manual_seed(2300 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    auto xa = torch::randn({6, 8});
    auto ya = torch::randint(0, 3, {6});
    auto xb = torch::randn({4, 8});
    auto yb = torch::randn({4, 1});
    optimizer.zero_grad();
    auto featuresA = backbone(xa);
    auto featuresB = backbone(xb); // corpus: expect here
    auto loss = torch::nn::functional::cross_entropy(headA(featuresA), ya) +
                torch::mse_loss(headB(featuresB), yb);
    loss.backward();
    optimizer.step();
    std::printf("rank %d step %d loss %.4f\n", pg->getRank(), step, loss.item<float>());
  }
  return 0;
}
