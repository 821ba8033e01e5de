// FixMatch ordered the other way: pseudo-labels from the weak view first,
// under NoGradGuard, then the labelled and strongly augmented batches in one
// forward, then one backward.
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

int main() {
  auto pg = ddpguard::init_process_group_from_env("gloo");
  torch::manual_seed(0);
  Net net;
  ddpguard::DistributedDataParallel<Net> model(net, pg);
  torch::optim::SGD optimizer(model.module()->parameters(), 0.03);
  torch::manual_seed(910 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    auto labelled = torch::randn({8, 8});
    auto labels = torch::randint(0, 5, {8});
    auto unlabelled = torch::randn({8, 8});
    torch::Tensor pseudo;
    {
      torch::NoGradGuard noGrad;
      pseudo = model(unlabelled + 0.05 * torch::randn_like(unlabelled)).argmax(1);
    }
    optimizer.zero_grad();
    auto logits = model(torch::cat({labelled, unlabelled * (1 + 0.5 * torch::randn_like(unlabelled))}));
    auto parts = logits.chunk(2);
    auto loss = torch::nn::functional::cross_entropy(parts[0], labels) +
                torch::nn::functional::cross_entropy(parts[1], pseudo);
    loss.backward();
    optimizer.step();
    std::printf("rank %d step %d loss %.4f\n", pg->getRank(), step, loss.item<float>());
  }
  return 0;
}
