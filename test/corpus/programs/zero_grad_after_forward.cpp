// A supervised DDP step with optimizer.zero_grad() placed between the
// forward and the backward, as many training loops write it: zero_grad
// resets the gradients (to undefined by default), it writes no parameter,
// so the forward's saved weights are intact at the backward. Trains.
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

#include <cstdio>

struct NetImpl : torch::nn::Module {
  NetImpl()
      : fc1(register_module("fc1", torch::nn::Linear(8, 16))),
        fc2(register_module("fc2", torch::nn::Linear(16, 4))) {}
  torch::Tensor forward(torch::Tensor x) { return fc2(torch::relu(fc1(x))); }
  torch::nn::Linear fc1;
  torch::nn::Linear fc2;
};
TORCH_MODULE(Net);

int main() {
  auto pg = ddpguard::init_process_group_from_env("gloo");
  torch::manual_seed(0);
  Net net;
  ddpguard::DistributedDataParallel<Net> model(net, pg);
  torch::optim::AdamW optimizer(model.module()->parameters(), 1e-3);
  torch::manual_seed(1940 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    auto x = torch::randn({8, 8});
    auto labels = torch::randint(0, 4, {8});
    auto loss = torch::nn::functional::cross_entropy(model(x), labels);
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
    std::printf("rank %d step %d loss %.4f\n", pg->getRank(), step, loss.item<float>());
  }
  return 0;
}
