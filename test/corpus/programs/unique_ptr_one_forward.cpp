// The DDP model in a std::unique_ptr, passed by reference to a train step
// that runs one forward and one backward.
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

#include <cstdio>
#include <memory>

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

static float trainStep(ddpguard::DistributedDataParallel<Net> &model,
                       torch::optim::Optimizer &optimizer, const torch::Tensor &x,
                       const torch::Tensor &y) {
  optimizer.zero_grad();
  auto loss = torch::nn::functional::cross_entropy(model(x), y);
  loss.backward();
  optimizer.step();
  return loss.item<float>();
}

int main() {
  auto pg = ddpguard::init_process_group_from_env("gloo");
  torch::manual_seed(0);
  Net net;
  auto ddp = std::make_unique<ddpguard::DistributedDataParallel<Net>>(net, pg);
  torch::optim::SGD optimizer(ddp->module()->parameters(), 0.05);
  torch::manual_seed(1610 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    float loss = trainStep(*ddp, optimizer, torch::randn({8, 8}), torch::randint(0, 5, {8}));
    std::printf("rank %d step %d loss %.4f\n", pg->getRank(), step, loss);
  }
  return 0;
}
