// A module with a registered offset buffer used only in an addition
// (x + buffer): addition saves nothing for backward, so two forwards before
// one backward train.
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

#include <cstdio>

struct ShiftedImpl : torch::nn::Module {
  ShiftedImpl()
      : l(register_module("l", torch::nn::Linear(8, 8))),
        out(register_module("out", torch::nn::Linear(8, 3))),
        offset(register_buffer("offset", torch::full({8}, 0.5))) {}
  torch::Tensor forward(torch::Tensor x) { return out(torch::relu(l(x) + offset)); }
  torch::nn::Linear l, out;
  torch::Tensor offset;
};
TORCH_MODULE(Shifted);

int main() {
  auto pg = ddpguard::init_process_group_from_env("gloo");
  torch::manual_seed(0);
  Shifted net;
  ddpguard::DistributedDataParallel<Shifted> model(net, pg);
  torch::optim::SGD optimizer(model.module()->parameters(), 0.05);
  torch::manual_seed(1210 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    auto a = torch::randn({6, 8});
    auto b = torch::randn({6, 8});
    optimizer.zero_grad();
    auto oa = model(a);
    auto ob = model(b);
    auto loss = (oa - ob).pow(2).mean();
    loss.backward();
    optimizer.step();
    std::printf("rank %d step %d loss %.4f\n", pg->getRank(), step, loss.item<float>());
  }
  return 0;
}
