// A module with a registered scale buffer (pytorch/pytorch#22095):
// forward is l(x) * scale, so autograd saves the buffer for backward. Two
// forwards before one backward.
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

#include <cstdio>

struct ScaledImpl : torch::nn::Module {
  ScaledImpl()
      : l(register_module("l", torch::nn::Linear(8, 8))),
        out(register_module("out", torch::nn::Linear(8, 3))),
        scale(register_buffer("scale", torch::full({8}, 1.5))) {}
  torch::Tensor forward(torch::Tensor x) { return out(l(x) * scale); }
  torch::nn::Linear l, out;
  torch::Tensor scale;
};
TORCH_MODULE(Scaled);

int main() {
  auto pg = ddpguard::init_process_group_from_env("gloo");
  torch::manual_seed(0);
  Scaled net;
  ddpguard::DistributedDataParallel<Scaled> model(net, pg);
  torch::optim::SGD optimizer(model.module()->parameters(), 0.05);
  torch::manual_seed(1200 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    auto a = torch::randn({6, 8});
    auto b = torch::randn({6, 8});
    optimizer.zero_grad();
    auto oa = model(a);
    auto ob = model(b); // corpus: expect here
    auto loss = (oa - ob).pow(2).mean();
    loss.backward();
    optimizer.step();
    std::printf("rank %d step %d loss %.4f\n", pg->getRank(), step, loss.item<float>());
  }
  return 0;
}
