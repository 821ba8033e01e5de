// A soft-target cross-entropy written by hand with the probabilities
// clamped in place before the log "for numerical safety",
// `probs.clamp_(1e-6, 1)`: softmax saves its output for backward, and the
// clamp overwrites it.
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

#include <cstdio>

int main() {
  auto pg = ddpguard::init_process_group_from_env("gloo");
  torch::manual_seed(0);
  torch::nn::Sequential net(torch::nn::Linear(8, 16), torch::nn::ReLU(), torch::nn::Linear(16, 5));
  torch::optim::Adam optimizer(net->parameters(), 1e-3);
  torch::manual_seed(1970 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    auto x = torch::randn({8, 8});
    auto soft = torch::softmax(torch::randn({8, 5}), 1);
    auto probs = torch::softmax(net->forward(x), 1);
    probs.clamp_(1e-6, 1.0); // corpus: expect here
    auto loss = -(soft * probs.log()).sum(1).mean();
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
    std::printf("rank %d step %d loss %.4f\n", pg->getRank(), step, loss.item<float>());
  }
  return 0;
}
