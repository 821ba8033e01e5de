// A gated block whose gate is rescaled from (0, 1) to (0, 2) in place right
// after the sigmoid, `gate.mul_(2)`: sigmoid saves its output for backward
// (its derivative is y * (1 - y)), so the in-place multiply modifies a
// tensor the backward needs. The DDP training step fails at its backward.
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

#include <cstdio>

struct GatedNetImpl : torch::nn::Module {
  GatedNetImpl()
      : fc(register_module("fc", torch::nn::Linear(8, 16))),
        gateFc(register_module("gateFc", torch::nn::Linear(8, 16))),
        head(register_module("head", torch::nn::Linear(16, 4))) {}
  torch::Tensor forward(torch::Tensor x) {
    auto h = torch::relu(fc(x));
    auto gate = torch::sigmoid(gateFc(x));
    gate.mul_(2); // corpus: expect here
    return head(h * gate);
  }
  torch::nn::Linear fc, gateFc, head;
};
TORCH_MODULE(GatedNet);

int main() {
  auto pg = ddpguard::init_process_group_from_env("gloo");
  torch::manual_seed(0);
  GatedNet net;
  ddpguard::DistributedDataParallel<GatedNet> model(net, pg);
  torch::optim::Adam optimizer(model.module()->parameters(), 1e-3);
  torch::manual_seed(1950 + pg->getRank());
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
