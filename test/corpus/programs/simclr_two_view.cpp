// SimCLR-style contrastive step: two augmented views of one batch, one
// forward per view on the DDP encoder, one NT-Xent backward.
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

#include <cstdio>

struct EncoderImpl : torch::nn::Module {
  EncoderImpl()
      : fc1(register_module("fc1", torch::nn::Linear(8, 16))),
        bn1(register_module("bn1", torch::nn::BatchNorm1d(16))),
        fc2(register_module("fc2", torch::nn::Linear(16, 4))) {}
  torch::Tensor forward(torch::Tensor x) {
    return fc2(torch::relu(bn1(fc1(x))));
  }
  torch::nn::Linear fc1;
  torch::nn::BatchNorm1d bn1;
  torch::nn::Linear fc2;
};
TORCH_MODULE(Encoder);

static torch::Tensor ntXent(const torch::Tensor &z1, const torch::Tensor &z2) {
  auto a = torch::nn::functional::normalize(z1);
  auto b = torch::nn::functional::normalize(z2);
  auto logits = torch::matmul(a, b.t()) / 0.2;
  return torch::nn::functional::cross_entropy(logits, torch::arange(z1.size(0)));
}

int main() {
  auto pg = ddpguard::init_process_group_from_env("gloo");
  torch::manual_seed(0);
  Encoder encoder;
  ddpguard::DistributedDataParallel<Encoder> model(encoder, pg);
  torch::optim::SGD optimizer(model.module()->parameters(), 0.05);
  torch::manual_seed(100 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    auto batch = torch::randn({8, 8});
    auto view1 = batch + 0.1 * torch::randn_like(batch);
    auto view2 = batch * (1.0 + 0.1 * torch::randn_like(batch));
    optimizer.zero_grad();
    auto z1 = model(view1);
    auto z2 = model(view2); // corpus: expect here
    auto loss = ntXent(z1, z2);
    loss.backward();
    optimizer.step();
    std::printf("rank %d step %d loss %.4f\n", pg->getRank(), step, loss.item<float>());
  }
  return 0;
}
