// A trainer class that owns the DDP model as a member and encodes each view
// through a small member helper; step() calls the helper twice before the
// backward.
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

class ContrastiveTrainer {
public:
  ContrastiveTrainer(Net net, ddpguard::ProcessGroupPtr pg)
      : model_(net, pg), optimizer_(model_.module()->parameters(), 0.05) {}

  float step(const torch::Tensor &batch) {
    optimizer_.zero_grad();
    auto z1 = encode(batch + 0.1 * torch::randn_like(batch));
    auto z2 = encode(batch + 0.1 * torch::randn_like(batch)); // corpus: expect here
    auto logits = torch::matmul(z1, z2.t());
    auto loss = torch::nn::functional::cross_entropy(logits, torch::arange(batch.size(0)));
    loss.backward();
    optimizer_.step();
    return loss.item<float>();
  }

private:
  torch::Tensor encode(const torch::Tensor &view) {
    return torch::nn::functional::normalize(model_(view));
  }

  ddpguard::DistributedDataParallel<Net> model_;
  torch::optim::SGD optimizer_;
};

int main() {
  auto pg = ddpguard::init_process_group_from_env("gloo");
  torch::manual_seed(0);
  ContrastiveTrainer trainer(Net(), pg);
  torch::manual_seed(1400 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    float loss = trainer.step(torch::randn({8, 8}));
    std::printf("rank %d step %d loss %.4f\n", pg->getRank(), step, loss);
  }
  return 0;
}
