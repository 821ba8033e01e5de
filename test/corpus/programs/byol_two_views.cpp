// BYOL: the online network (DDP, with a predictor) sees both views; the
// target network is a plain EMA copy evaluated under NoGradGuard. The
// symmetric loss needs both online outputs, so one backward follows two
// online forwards.
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

#include <cstdio>

struct OnlineImpl : torch::nn::Module {
  OnlineImpl()
      : fc(register_module("fc", torch::nn::Linear(8, 16))),
        bn(register_module("bn", torch::nn::BatchNorm1d(16))),
        proj(register_module("proj", torch::nn::Linear(16, 4))),
        pred(register_module("pred", torch::nn::Linear(4, 4))) {}
  torch::Tensor forward(torch::Tensor x) {
    return pred(proj(torch::relu(bn(fc(x)))));
  }
  torch::nn::Linear fc;
  torch::nn::BatchNorm1d bn;
  torch::nn::Linear proj, pred;
};
TORCH_MODULE(Online);

struct TargetImpl : torch::nn::Module {
  TargetImpl()
      : fc(register_module("fc", torch::nn::Linear(8, 16))),
        proj(register_module("proj", torch::nn::Linear(16, 4))) {}
  torch::Tensor forward(torch::Tensor x) { return proj(torch::relu(fc(x))); }
  torch::nn::Linear fc, proj;
};
TORCH_MODULE(Target);

static torch::Tensor byolLoss(const torch::Tensor &p, const torch::Tensor &t) {
  auto pn = torch::nn::functional::normalize(p);
  auto tn = torch::nn::functional::normalize(t);
  return (2 - 2 * (pn * tn).sum(1)).mean();
}

int main() {
  auto pg = ddpguard::init_process_group_from_env("gloo");
  torch::manual_seed(0);
  Online online;
  Target target;
  ddpguard::DistributedDataParallel<Online> model(online, pg);
  torch::optim::SGD optimizer(model.module()->parameters(), 0.05);
  torch::manual_seed(200 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    auto x = torch::randn({8, 8});
    auto v1 = x + 0.1 * torch::randn_like(x);
    auto v2 = x + 0.1 * torch::randn_like(x);
    torch::Tensor t1, t2;
    {
      torch::NoGradGuard noGrad;
      t1 = target(v1);
      t2 = target(v2);
    }
    optimizer.zero_grad();
    auto p1 = model(v1);
    auto p2 = model(v2); // corpus: expect here
    auto loss = byolLoss(p1, t2) + byolLoss(p2, t1);
    loss.backward();
    optimizer.step();
    {
      torch::NoGradGuard noGrad;
      target->fc->weight.mul_(0.99).add_(0.01 * model.module()->fc->weight);
    }
    std::printf("rank %d step %d loss %.4f\n", pg->getRank(), step, loss.item<float>());
  }
  return 0;
}
