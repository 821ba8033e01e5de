// A gradient-norm penalty on the parameters computed with
// autograd::grad(retain_graph=false, create_graph=true): the first graph is
// freed, but the gradients' own graph saved what its nodes needed,
// BatchNorm's running statistics among them. A second batch is scored and
// the penalty is backpropagated with the second loss.
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

#include <cstdio>

struct NetImpl : torch::nn::Module {
  NetImpl()
      : fc1(register_module("fc1", torch::nn::Linear(16, 32))),
        bn(register_module("bn", torch::nn::BatchNorm1d(32))),
        fc2(register_module("fc2", torch::nn::Linear(32, 4))) {}
  torch::Tensor forward(torch::Tensor x) {
    return fc2(torch::relu(bn(fc1(x))));
  }
  torch::nn::Linear fc1;
  torch::nn::BatchNorm1d bn;
  torch::nn::Linear fc2;
};
TORCH_MODULE(Net);

int main() {
  auto pg = ddpguard::init_process_group_from_env("gloo");
  torch::manual_seed(0);
  Net net;
  ddpguard::DistributedDataParallel<Net> model(net, pg);
  auto params = model.module()->parameters();
  torch::optim::SGD opt(params, 0.01);
  torch::manual_seed(690 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    auto a = torch::randn({6, 16});
    auto b = torch::randn({6, 16});
    opt.zero_grad();
    auto first = model(a).pow(2).mean();
    auto grads = torch::autograd::grad({first}, params, {},
                                       /*retain_graph=*/false, /*create_graph=*/true);
    auto penalty = torch::zeros({});
    for (const auto &g : grads)
      penalty = penalty + g.pow(2).sum();
    auto second = model(b).pow(2).mean(); // corpus: expect here
    (second + 0.1 * penalty).backward();
    opt.step();
    std::printf("rank %d step %d second %.4f penalty %.4f\n", pg->getRank(),
                step, second.item<float>(), penalty.item<float>());
  }
  return 0;
}
