// The gate of sigmoid_gate_mul_inplace rescaled in place on a clone,
// `gate = torch::sigmoid(...).clone(); gate.mul_(2)`: the clone is a new
// tensor, and sigmoid's saved result keeps its version. Trains.
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

#include <cstdio>

struct GatedImpl : torch::nn::Module {
  GatedImpl()
      : fc(register_module("fc", torch::nn::Linear(8, 16))),
        gateFc(register_module("gateFc", torch::nn::Linear(8, 16))),
        head(register_module("head", torch::nn::Linear(16, 4))) {}
  torch::Tensor forward(torch::Tensor x) {
    auto h = torch::relu(fc(x));
    auto gate = torch::sigmoid(gateFc(x)).clone();
    gate.mul_(2);
    return head(h * gate);
  }
  torch::nn::Linear fc, gateFc, head;
};
TORCH_MODULE(Gated);

int main() {
  auto pg = ddpguard::init_process_group_from_env("gloo");
  torch::manual_seed(0);
  Gated net;
  ddpguard::DistributedDataParallel<Gated> model(net, pg);
  torch::optim::Adam optimizer(model.module()->parameters(), 1e-3);
  torch::manual_seed(2150 + pg->getRank());
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
