// A free helper takes the DDP model by pointer and runs a whole contrastive
// step: two views, then one backward. A trainer class owns the model and
// calls the helper with its address; the construction the fix must reach is
// the trainer's member initialiser.
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

using DDP = ddpguard::DistributedDataParallel<Net>;

static torch::Tensor contrastiveStep(DDP *model, const torch::Tensor &batch) {
  auto z1 = (*model)(batch + 0.1 * torch::randn_like(batch));
  auto z2 = model->forward(batch + 0.1 * torch::randn_like(batch)); // corpus: expect here
  auto logits = torch::matmul(torch::nn::functional::normalize(z1),
                              torch::nn::functional::normalize(z2).t());
  auto loss = torch::nn::functional::cross_entropy(logits / 0.1,
                                                   torch::arange(batch.size(0)));
  loss.backward();
  return loss;
}

class Trainer {
public:
  Trainer(Net net, ddpguard::ProcessGroupPtr pg)
      : model_(net, pg), optimizer_(model_.module()->parameters(), 0.05) {}

  float step(const torch::Tensor &batch) {
    optimizer_.zero_grad();
    auto loss = contrastiveStep(&model_, batch);
    optimizer_.step();
    return loss.item<float>();
  }

private:
  DDP model_;
  torch::optim::SGD optimizer_;
};

int main() {
  auto pg = ddpguard::init_process_group_from_env("gloo");
  torch::manual_seed(0);
  Trainer trainer(Net(), pg);
  torch::manual_seed(2300 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    float loss = trainer.step(torch::randn({8, 8}));
    std::printf("rank %d step %d loss %.4f\n", pg->getRank(), step, loss);
  }
  return 0;
}
