// FixMatch: supervised logits on the labelled batch, pseudo-labels from the
// weakly augmented unlabelled batch under NoGradGuard, and the strongly
// augmented batch trained towards them; one backward of both losses.
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
  torch::manual_seed(900 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    auto labelled = torch::randn({8, 8});
    auto labels = torch::randint(0, 5, {8});
    auto unlabelled = torch::randn({8, 8});
    optimizer.zero_grad();
    auto supervised = model(labelled);
    torch::Tensor pseudo, mask;
    {
      torch::NoGradGuard noGrad;
      auto probs = torch::softmax(model(unlabelled + 0.05 * torch::randn_like(unlabelled)), 1); // corpus: expect here
      auto best = probs.max(1);
      pseudo = std::get<1>(best);
      mask = (std::get<0>(best) > 0.3).to(torch::kFloat);
    }
    auto strong = model(unlabelled * (1 + 0.5 * torch::randn_like(unlabelled)));
    auto unsupervised = (torch::nn::functional::cross_entropy(
                             strong, pseudo,
                             torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone)) *
                         mask).mean();
    auto loss = torch::nn::functional::cross_entropy(supervised, labels) + unsupervised;
    loss.backward();
    optimizer.step();
    std::printf("rank %d step %d loss %.4f\n", pg->getRank(), step, loss.item<float>());
  }
  return 0;
}
