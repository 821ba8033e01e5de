// Views encoded with std::for_each and a lambda that pushes each output
// into a vector captured by reference; one backward of the outputs'
// difference trains both.
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
  torch::manual_seed(1730 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    auto batch = torch::randn({8, 8});
    std::vector<torch::Tensor> views{batch, batch.flip(0)};
    optimizer.zero_grad();
    std::vector<torch::Tensor> embeddings;
    std::for_each(views.begin(), views.end(), [&](const torch::Tensor &view) {
      embeddings.push_back(model(view)); // corpus: expect here
    });
    auto loss = (embeddings[0] - embeddings[1]).pow(2).mean();
    loss.backward();
    optimizer.step();
    std::printf("rank %d step %d loss %.4f\n", pg->getRank(), step, loss.item<float>());
  }
  return 0;
}
