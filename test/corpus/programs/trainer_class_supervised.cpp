// A trainer class with the DDP model as a member: one forward, one
// backward per step, and an evaluate() that runs after training under
// NoGradGuard in eval mode.
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

class Trainer {
public:
  Trainer(Net net, ddpguard::ProcessGroupPtr pg)
      : model_(net, pg), optimizer_(model_.module()->parameters(), 0.05) {}

  float trainStep(const torch::Tensor &x, const torch::Tensor &y) {
    optimizer_.zero_grad();
    auto loss = torch::nn::functional::cross_entropy(model_(x), y);
    loss.backward();
    optimizer_.step();
    return loss.item<float>();
  }

  float evaluate(const torch::Tensor &x, const torch::Tensor &y) {
    torch::NoGradGuard noGrad;
    model_.module()->eval();
    auto accuracy = (model_(x).argmax(1) == y).to(torch::kFloat).mean().item<float>();
    model_.module()->train();
    return accuracy;
  }

private:
  ddpguard::DistributedDataParallel<Net> model_;
  torch::optim::SGD optimizer_;
};

int main() {
  auto pg = ddpguard::init_process_group_from_env("gloo");
  torch::manual_seed(0);
  Trainer trainer(Net(), pg);
  torch::manual_seed(1410 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    auto loss = trainer.trainStep(torch::randn({8, 8}), torch::randint(0, 5, {8}));
    auto accuracy = trainer.evaluate(torch::randn({8, 8}), torch::randint(0, 5, {8}));
    std::printf("rank %d step %d loss %.4f acc %.2f\n", pg->getRank(), step, loss, accuracy);
  }
  return 0;
}
