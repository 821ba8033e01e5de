// An MLP that keeps the positive half of a tanh layer with an in-place
// ReLU, `h.relu_()`, the C++ spelling of nn.ReLU(inplace=True) after
// nn.Tanh(): tanh saves its output for backward (1 - y^2), and relu_
// overwrites it.
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

#include <cstdio>

struct MlpImpl : torch::nn::Module {
  MlpImpl()
      : fc1(register_module("fc1", torch::nn::Linear(8, 16))),
        fc2(register_module("fc2", torch::nn::Linear(16, 4))) {}
  torch::Tensor forward(torch::Tensor x) {
    auto h = torch::tanh(fc1(x));
    h.relu_(); // corpus: expect here
    return fc2(h);
  }
  torch::nn::Linear fc1, fc2;
};
TORCH_MODULE(Mlp);

int main() {
  auto pg = ddpguard::init_process_group_from_env("gloo");
  torch::manual_seed(0);
  Mlp mlp;
  torch::optim::SGD optimizer(mlp->parameters(), 1e-2);
  torch::manual_seed(1960 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    auto x = torch::randn({8, 8});
    auto y = torch::randn({8, 4});
    optimizer.zero_grad();
    auto loss = torch::mse_loss(mlp(x), y);
    loss.backward();
    optimizer.step();
    std::printf("rank %d step %d loss %.4f\n", pg->getRank(), step, loss.item<float>());
  }
  return 0;
}
