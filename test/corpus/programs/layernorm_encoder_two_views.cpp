// Two-view contrastive training with a LayerNorm encoder: the module has no
// buffers, so DDP has nothing to broadcast and two forwards before one
// backward train.
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

#include <cstdio>

struct EncoderImpl : torch::nn::Module {
  EncoderImpl()
      : fc1(register_module("fc1", torch::nn::Linear(8, 16))),
        norm(register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({16})))),
        fc2(register_module("fc2", torch::nn::Linear(16, 4))) {}
  torch::Tensor forward(torch::Tensor x) { return fc2(torch::gelu(norm(fc1(x)))); }
  torch::nn::Linear fc1;
  torch::nn::LayerNorm norm;
  torch::nn::Linear fc2;
};
TORCH_MODULE(Encoder);

int main() {
  auto pg = ddpguard::init_process_group_from_env("gloo");
  torch::manual_seed(0);
  Encoder encoder;
  ddpguard::DistributedDataParallel<Encoder> model(encoder, pg);
  torch::optim::SGD optimizer(model.module()->parameters(), 0.05);
  torch::manual_seed(1900 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    auto batch = torch::randn({8, 8});
    optimizer.zero_grad();
    auto z1 = model(batch + 0.1 * torch::randn_like(batch));
    auto z2 = model(batch + 0.1 * torch::randn_like(batch));
    auto loss = torch::nn::functional::cross_entropy(torch::matmul(z1, z2.t()), torch::arange(8));
    loss.backward();
    optimizer.step();
    std::printf("rank %d step %d loss %.4f\n", pg->getRank(), step, loss.item<float>());
  }
  return 0;
}
