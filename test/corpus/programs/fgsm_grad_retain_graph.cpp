// Adversarial training (FGSM): the input gradient of the clean loss is taken
// with autograd::grad(retain_graph=true) and without create_graph, the
// perturbed batch is scored, and only the adversarial loss is
// backpropagated. The gradient carries no graph and the clean graph is never
// traversed again, so the broadcast before the second forward harms nothing.
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

#include <cstdio>

struct ClassifierImpl : torch::nn::Module {
  ClassifierImpl()
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
TORCH_MODULE(Classifier);

int main() {
  auto pg = ddpguard::init_process_group_from_env("gloo");
  torch::manual_seed(0);
  Classifier net;
  ddpguard::DistributedDataParallel<Classifier> model(net, pg);
  torch::optim::SGD opt(model.module()->parameters(), 0.01);
  torch::manual_seed(680 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    auto x = torch::randn({6, 16}).requires_grad_(true);
    auto y = torch::randint(0, 4, {6});
    opt.zero_grad();
    auto clean = torch::cross_entropy_loss(model(x), y);
    auto gradX = torch::autograd::grad({clean}, {x}, {}, /*retain_graph=*/true)[0];
    auto xAdv = x + 0.03 * gradX.sign();
    auto adv = torch::cross_entropy_loss(model(xAdv), y);
    adv.backward();
    opt.step();
    std::printf("rank %d step %d clean %.4f adv %.4f\n", pg->getRank(), step,
                clean.item<float>(), adv.item<float>());
  }
  return 0;
}
