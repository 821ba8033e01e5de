// The trainer builds its DDP model in a factory, as real trainers do
// (build_model() returning a std::shared_ptr), then runs two views through
// it before one backward. The fixes go to the construction in the factory.
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

#include <cstdio>
#include <memory>

struct EncoderImpl : torch::nn::Module {
  EncoderImpl()
      : fc1(register_module("fc1", torch::nn::Linear(8, 16))),
        bn(register_module("bn", torch::nn::BatchNorm1d(16))),
        fc2(register_module("fc2", torch::nn::Linear(16, 4))) {}
  torch::Tensor forward(torch::Tensor x) { return fc2(torch::relu(bn(fc1(x)))); }
  torch::nn::Linear fc1;
  torch::nn::BatchNorm1d bn;
  torch::nn::Linear fc2;
};
TORCH_MODULE(Encoder);

using Model = ddpguard::DistributedDataParallel<Encoder>;

std::shared_ptr<Model> build_model(ddpguard::ProcessGroupPtr pg) {
  return std::make_shared<Model>(Encoder(), pg);
}

int main() {
  auto pg = ddpguard::init_process_group_from_env("gloo");
  torch::manual_seed(0);
  auto model = build_model(pg);
  torch::optim::SGD optimizer(model->module()->parameters(), 0.05);
  torch::manual_seed(2100 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    auto batch = torch::randn({8, 8});
    optimizer.zero_grad();
    auto z1 = (*model)(batch + 0.1 * torch::randn_like(batch));
    auto z2 = (*model)(batch - 0.1 * torch::randn_like(batch)); // corpus: expect here
    auto loss = torch::mse_loss(z1, z2) + z1.pow(2).mean();
    loss.backward();
    optimizer.step();
    std::printf("rank %d step %d loss %.4f\n", pg->getRank(), step, loss.item<float>());
  }
  return 0;
}
