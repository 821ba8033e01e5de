// A projection head with BatchNorm1d that does not track running statistics
// (batch statistics only, as some contrastive heads use): the module has no
// buffers, so two views before one backward train.
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

#include <cstdio>

struct HeadImpl : torch::nn::Module {
  HeadImpl()
      : fc(register_module("fc", torch::nn::Linear(8, 16))),
        bn(register_module("bn", torch::nn::BatchNorm1d(
                                     torch::nn::BatchNorm1dOptions(16).track_running_stats(false)))),
        out(register_module("out", torch::nn::Linear(16, 4))) {}
  torch::Tensor forward(torch::Tensor x) { return out(torch::relu(bn(fc(x)))); }
  torch::nn::Linear fc;
  torch::nn::BatchNorm1d bn;
  torch::nn::Linear out;
};
TORCH_MODULE(Head);

int main() {
  auto pg = ddpguard::init_process_group_from_env("gloo");
  torch::manual_seed(0);
  Head head;
  ddpguard::DistributedDataParallel<Head> model(head, pg);
  torch::optim::SGD optimizer(model.module()->parameters(), 0.05);
  torch::manual_seed(1960 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    auto x = torch::randn({6, 8});
    optimizer.zero_grad();
    auto z1 = model(x + 0.1 * torch::randn_like(x));
    auto z2 = model(x + 0.1 * torch::randn_like(x));
    auto loss = torch::mse_loss(z1, z2) + z1.pow(2).mean() * 1e-3;
    loss.backward();
    optimizer.step();
    std::printf("rank %d step %d loss %.4f\n", pg->getRank(), step, loss.item<float>());
  }
  return 0;
}
