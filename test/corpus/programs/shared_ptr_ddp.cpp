// The DDP model lives in a std::shared_ptr (as it would in a model
// registry); the two views go through (*ddp)(x) and ddp->forward(x).
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

int main() {
  auto pg = ddpguard::init_process_group_from_env("gloo");
  torch::manual_seed(0);
  Net net;
  auto ddp = std::make_shared<ddpguard::DistributedDataParallel<Net>>(net, pg);
  torch::optim::SGD optimizer(ddp->module()->parameters(), 0.05);
  torch::manual_seed(1600 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    auto batch = torch::randn({8, 8});
    optimizer.zero_grad();
    auto z1 = (*ddp)(batch + 0.1 * torch::randn_like(batch));
    auto z2 = ddp->forward(batch - 0.1 * torch::randn_like(batch)); // corpus: expect here
    auto loss = torch::mse_loss(z1, z2) + z1.pow(2).mean();
    loss.backward();
    optimizer.step();
    std::printf("rank %d step %d loss %.4f\n", pg->getRank(), step, loss.item<float>());
  }
  return 0;
}
