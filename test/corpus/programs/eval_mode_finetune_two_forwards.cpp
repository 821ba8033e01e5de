// Fine-tuning with frozen BatchNorm statistics (the module stays in eval
// mode): a paired-input loss runs two forwards before one backward. Eval
// BatchNorm still saves its running statistics for backward.
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
  net->eval();
  ddpguard::DistributedDataParallel<Net> model(net, pg);
  torch::optim::SGD optimizer(model.module()->parameters(), 0.01);
  torch::manual_seed(1300 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    auto clean = torch::randn({6, 8});
    auto noisy = clean + 0.1 * torch::randn_like(clean);
    auto labels = torch::randint(0, 5, {6});
    optimizer.zero_grad();
    auto cleanLogits = model(clean);
    auto noisyLogits = model(noisy); // corpus: expect here
    auto loss = torch::nn::functional::cross_entropy(cleanLogits, labels) +
                torch::mse_loss(noisyLogits, cleanLogits);
    loss.backward();
    optimizer.step();
    std::printf("rank %d step %d loss %.4f\n", pg->getRank(), step, loss.item<float>());
  }
  return 0;
}
