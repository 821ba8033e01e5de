// residual_add_inplace_saved_by_mul with the residual added out of place,
// `h = h + fc2(gated)`: the tensor the multiplication saved is left as it
// was, and h names a new one. Trains.
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
    h = h + fc2(gated);
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
  torch::manual_seed(2030 + pg->getRank());
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
