// Triplet embedding: anchor, positive and negative each through the DDP
// embedder, then TripletMarginLoss and one backward.
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

#include <cstdio>

struct EmbedderImpl : torch::nn::Module {
  EmbedderImpl()
      : fc1(register_module("fc1", torch::nn::Linear(10, 16))),
        bn(register_module("bn", torch::nn::BatchNorm1d(16))),
        fc2(register_module("fc2", torch::nn::Linear(16, 6))) {}
  torch::Tensor forward(torch::Tensor x) { return fc2(torch::relu(bn(fc1(x)))); }
  torch::nn::Linear fc1;
  torch::nn::BatchNorm1d bn;
  torch::nn::Linear fc2;
};
TORCH_MODULE(Embedder);

int main() {
  auto pg = ddpguard::init_process_group_from_env("gloo");
  torch::manual_seed(0);
  Embedder embedder;
  ddpguard::DistributedDataParallel<Embedder> model(embedder, pg);
  torch::optim::SGD optimizer(model.module()->parameters(), 0.05);
  torch::nn::TripletMarginLoss tripletLoss(torch::nn::TripletMarginLossOptions().margin(0.5));
  torch::manual_seed(510 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    auto anchor = torch::randn({8, 10});
    auto positive = anchor + 0.05 * torch::randn_like(anchor);
    auto negative = torch::randn({8, 10});
    optimizer.zero_grad();
    auto a = model(anchor);
    auto p = model(positive); // corpus: expect here
    auto n = model(negative); // corpus: expect here
    auto loss = tripletLoss(a, p, n);
    loss.backward();
    optimizer.step();
    std::printf("rank %d step %d loss %.4f\n", pg->getRank(), step, loss.item<float>());
  }
  return 0;
}
