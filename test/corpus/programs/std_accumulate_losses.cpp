// Per-task losses summed with std::accumulate over the tasks' batches,
// each term calling the shared DDP backbone, then one backward.
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

#include <cstdio>
#include <numeric>
#include <utility>
#include <vector>

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
  ddpguard::DistributedDataParallel<Net> model(net, pg);
  torch::optim::SGD optimizer(model.module()->parameters(), 0.05);
  torch::manual_seed(1710 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    std::vector<std::pair<torch::Tensor, torch::Tensor>> tasks;
    for (int t = 0; t < 2; ++t)
      tasks.emplace_back(torch::randn({6, 8}), torch::randint(0, 5, {6}));
    optimizer.zero_grad();
    auto loss = std::accumulate(
        tasks.begin(), tasks.end(), torch::zeros({}),
        [&](const torch::Tensor &sum, const std::pair<torch::Tensor, torch::Tensor> &task) {
          return sum + torch::nn::functional::cross_entropy(model(task.first), task.second); // corpus: expect here
        });
    loss.backward();
    optimizer.step();
    std::printf("rank %d step %d loss %.4f\n", pg->getRank(), step, loss.item<float>());
  }
  return 0;
}
