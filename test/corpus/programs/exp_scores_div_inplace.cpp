// A hand-written softmax that normalises in place: `e.div_(e.sum(1, true))`
// after `e = torch::exp(...)`. exp saves its result for backward (its
// derivative is the result itself), and the in-place division modifies it.
// The DDP training step fails at its backward.
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

#include <cstdio>

struct ScorerImpl : torch::nn::Module {
  ScorerImpl()
      : fc(register_module("fc", torch::nn::Linear(8, 16))),
        head(register_module("head", torch::nn::Linear(16, 4))) {}
  torch::Tensor forward(torch::Tensor x) {
    auto scores = fc(x);
    auto e = torch::exp(scores - std::get<0>(scores.max(1, true)).detach());
    e.div_(e.sum(1, true)); // corpus: expect here
    return head(e);
  }
  torch::nn::Linear fc, head;
};
TORCH_MODULE(Scorer);

int main() {
  auto pg = ddpguard::init_process_group_from_env("gloo");
  torch::manual_seed(0);
  Scorer net;
  ddpguard::DistributedDataParallel<Scorer> model(net, pg);
  torch::optim::Adam optimizer(model.module()->parameters(), 1e-3);
  torch::manual_seed(2110 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    auto x = torch::randn({8, 8});
    auto labels = torch::randint(0, 4, {8});
    optimizer.zero_grad();
    auto loss = torch::nn::functional::cross_entropy(model(x), labels);
    loss.backward();
    optimizer.step();
    std::printf("rank %d step %d loss %.4f\n", pg->getRank(), step, loss.item<float>());
  }
  return 0;
}
