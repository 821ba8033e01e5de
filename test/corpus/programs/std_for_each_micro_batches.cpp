// Micro-batches trained with std::for_each: the lambda runs a forward and
// its backward for each micro-batch, accumulating gradients, then one step.
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
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
  torch::manual_seed(1740 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    auto batch = torch::randn({12, 8});
    auto targets = torch::randint(0, 5, {12});
    std::vector<torch::Tensor> chunks = batch.chunk(3);
    std::vector<torch::Tensor> labels = targets.chunk(3);
    optimizer.zero_grad();
    float total = 0;
    int index = 0;
    std::for_each(chunks.begin(), chunks.end(), [&](const torch::Tensor &chunk) {
      auto loss = torch::nn::functional::cross_entropy(model(chunk), labels[index++]) / 3;
      loss.backward();
      total += loss.item<float>();
    });
    optimizer.step();
    std::printf("rank %d step %d loss %.4f\n", pg->getRank(), step, total);
  }
  return 0;
}
