// "Gradient accumulation" by summing the micro-batch losses and calling
// backward once after the loop, to save the backward calls.
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
  ddpguard::DistributedDataParallel<Net> model(net, pg);
  torch::optim::SGD optimizer(model.module()->parameters(), 0.05);
  torch::manual_seed(1110 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    optimizer.zero_grad();
    auto loss = torch::zeros({});
    for (int micro = 0; micro < 3; ++micro) {
      auto x = torch::randn({4, 8});
      auto y = torch::randint(0, 5, {4});
      loss = loss + torch::nn::functional::cross_entropy(model(x), y) / 3; // corpus: expect here
    }
    loss.backward();
    optimizer.step();
    std::printf("rank %d step %d loss %.4f\n", pg->getRank(), step, loss.item<float>());
  }
  return 0;
}
