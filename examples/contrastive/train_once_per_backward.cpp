// train.cpp fixed with ddpguard's buffer policy: buffers are broadcast on the
// first forward after a backward only, so the second view's forward reuses
// them and the buffers stay synchronised once per step.
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

#include <cstdio>

struct EncoderImpl : torch::nn::Module {
  EncoderImpl()
      : fc1(register_module("fc1", torch::nn::Linear(16, 32))),
        bn1(register_module("bn1", torch::nn::BatchNorm1d(32))),
        fc2(register_module("fc2", torch::nn::Linear(32, 8))) {}

  torch::Tensor forward(torch::Tensor x) {
    return fc2(torch::relu(bn1(fc1(x))));
  }

  torch::nn::Linear fc1;
  torch::nn::BatchNorm1d bn1;
  torch::nn::Linear fc2;
};
TORCH_MODULE(Encoder);

// Agreement between two views of the same samples (a simplified NT-Xent).
static torch::Tensor contrastiveLoss(const torch::Tensor &z1,
                                     const torch::Tensor &z2) {
  auto logits = torch::matmul(torch::nn::functional::normalize(z1),
                              torch::nn::functional::normalize(z2).t());
  auto targets = torch::arange(z1.size(0));
  return torch::nn::functional::cross_entropy(logits / 0.1, targets);
}

static torch::Tensor augment(const torch::Tensor &batch) {
  return batch + 0.1 * torch::randn_like(batch);
}

int main() {
  auto processGroup = ddpguard::init_process_group_from_env("gloo");
  torch::manual_seed(0);

  Encoder encoder;
  ddpguard::DistributedDataParallel<Encoder> model(
      encoder, processGroup,
      ddpguard::DDPOptions().buffer_broadcast(
          ddpguard::BufferBroadcast::kOncePerBackward));
  torch::optim::SGD optimizer(model.module()->parameters(), 0.05);

  for (int step = 0; step < 5; ++step) {
    auto batch = torch::randn({32, 16});
    optimizer.zero_grad();
    auto z1 = model(augment(batch));
    auto z2 = model(augment(batch));
    auto loss = contrastiveLoss(z1, z2);
    loss.backward();
    optimizer.step();
    std::printf("rank %d step %d loss %.4f\n", processGroup->getRank(), step,
                loss.item<float>());
  }
  return 0;
}
