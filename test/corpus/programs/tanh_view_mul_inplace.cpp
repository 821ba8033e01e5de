// A tanh activation damped in place through a view, `h.view({-1}).mul_(0.5)`:
// the view shares the storage and version counter of tanh's result, which
// tanh saved for backward. The DDP training step fails at its backward.
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

#include <cstdio>

struct DampedImpl : torch::nn::Module {
  DampedImpl()
      : fc1(register_module("fc1", torch::nn::Linear(8, 16))),
        fc2(register_module("fc2", torch::nn::Linear(16, 4))) {}
  torch::Tensor forward(torch::Tensor x) {
    auto h = torch::tanh(fc1(x));
    h.view({-1}).mul_(0.5); // corpus: expect here
    return fc2(h);
  }
  torch::nn::Linear fc1, fc2;
};
TORCH_MODULE(Damped);

int main() {
  auto pg = ddpguard::init_process_group_from_env("gloo");
  torch::manual_seed(0);
  Damped net;
  ddpguard::DistributedDataParallel<Damped> model(net, pg);
  torch::optim::Adam optimizer(model.module()->parameters(), 1e-3);
  torch::manual_seed(2130 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    auto x = torch::randn({8, 8});
    auto labels = torch::randint(0, 4, {8});
    optimizer.zero_grad();
    auto loss = torch::nn::functional::cross_entropy(model(x), labels);
    loss.backward();
    optimizer.step();
    std::printf("rank %d step %d loss %.4f\n", pg->getRank(), step, loss.item<float>());
  }
  return 0;
}
