// BYOL with both views concatenated into one batch: a single online forward,
// split afterwards, then the symmetric loss and one backward.
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

#include <cstdio>

struct OnlineImpl : torch::nn::Module {
  OnlineImpl()
      : fc(register_module("fc", torch::nn::Linear(8, 16))),
        bn(register_module("bn", torch::nn::BatchNorm1d(16))),
        proj(register_module("proj", torch::nn::Linear(16, 4))) {}
  torch::Tensor forward(torch::Tensor x) { return proj(torch::relu(bn(fc(x)))); }
  torch::nn::Linear fc;
  torch::nn::BatchNorm1d bn;
  torch::nn::Linear proj;
};
TORCH_MODULE(Online);

static torch::Tensor byolLoss(const torch::Tensor &p, const torch::Tensor &t) {
  auto pn = torch::nn::functional::normalize(p);
  auto tn = torch::nn::functional::normalize(t);
  return (2 - 2 * (pn * tn).sum(1)).mean();
}

int main() {
  auto pg = ddpguard::init_process_group_from_env("gloo");
  torch::manual_seed(0);
  Online online;
  ddpguard::DistributedDataParallel<Online> model(online, pg);
  torch::optim::Adam optimizer(model.module()->parameters(), 1e-3);
  torch::manual_seed(210 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    auto x = torch::randn({6, 8});
    auto both = torch::cat({x + 0.1 * torch::randn_like(x), x + 0.1 * torch::randn_like(x)});
    optimizer.zero_grad();
    auto out = model(both);
    auto halves = out.chunk(2);
    auto loss = byolLoss(halves[0], halves[1].detach()) + byolLoss(halves[1], halves[0].detach());
    loss.backward();
    optimizer.step();
    std::printf("rank %d step %d loss %.4f\n", pg->getRank(), step, loss.item<float>());
  }
  return 0;
}
