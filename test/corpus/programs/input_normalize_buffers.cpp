// An encoder that normalises its raw input with mean and std buffers before
// the first layer (as image models do): the input needs no gradient, so no
// graph node saves the buffers, and two views before one backward train.
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

#include <cstdio>

struct NormalisedEncoderImpl : torch::nn::Module {
  NormalisedEncoderImpl()
      : fc(register_module("fc", torch::nn::Linear(8, 16))),
        proj(register_module("proj", torch::nn::Linear(16, 4))),
        mean(register_buffer("mean", torch::full({8}, 0.1))),
        stddev(register_buffer("stddev", torch::full({8}, 1.2))) {}
  torch::Tensor forward(torch::Tensor x) {
    auto normalised = (x - mean) / stddev;
    return proj(torch::relu(fc(normalised)));
  }
  torch::nn::Linear fc, proj;
  torch::Tensor mean, stddev;
};
TORCH_MODULE(NormalisedEncoder);

int main() {
  auto pg = ddpguard::init_process_group_from_env("gloo");
  torch::manual_seed(0);
  NormalisedEncoder net;
  ddpguard::DistributedDataParallel<NormalisedEncoder> model(net, pg);
  torch::optim::SGD optimizer(model.module()->parameters(), 0.05);
  torch::manual_seed(1950 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    auto x = torch::randn({6, 8});
    optimizer.zero_grad();
    auto z1 = model(x + 0.1 * torch::randn_like(x));
    auto z2 = model(x + 0.1 * torch::randn_like(x));
    auto loss = 1 - torch::cosine_similarity(z1, z2, 1).mean();
    loss.backward();
    optimizer.step();
    std::printf("rank %d step %d loss %.4f\n", pg->getRank(), step, loss.item<float>());
  }
  return 0;
}
