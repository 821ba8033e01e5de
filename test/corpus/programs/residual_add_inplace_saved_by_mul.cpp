// A gated residual block that adds the residual branch in place,
// `h += fc2(gated)`, after h has been multiplied by its gate: the
// multiplication saved h for backward (the gate's gradient is grad * h),
// and `+=` modifies it. The DDP training step fails at its backward.
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

#include <cstdio>

struct BlockImpl : torch::nn::Module {
  BlockImpl()
      : fc1(register_module("fc1", torch::nn::Linear(8, 16))),
        gate(register_module("gate", torch::nn::Linear(8, 16))),
        fc2(register_module("fc2", torch::nn::Linear(16, 16))),
        head(register_module("head", torch::nn::Linear(16, 4))) {}
  torch::Tensor forward(torch::Tensor x) {
    auto h = fc1(x);
    auto gated = h * torch::sigmoid(gate(x));
    h += fc2(gated); // corpus: expect here
    return head(torch::relu(h));
  }
  torch::nn::Linear fc1, gate, fc2, head;
};
TORCH_MODULE(Block);

int main() {
  auto pg = ddpguard::init_process_group_from_env("gloo");
  torch::manual_seed(0);
  Block block;
  ddpguard::DistributedDataParallel<Block> model(block, pg);
  torch::optim::Adam optimizer(model.module()->parameters(), 1e-3);
  torch::manual_seed(2020 + pg->getRank());
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
