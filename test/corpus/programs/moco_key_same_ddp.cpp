// A MoCo-like step that saves a second network by computing the keys with
// the same DDP encoder under NoGradGuard, after the query forward.
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

#include <cstdio>

struct EncoderImpl : torch::nn::Module {
  EncoderImpl()
      : fc(register_module("fc", torch::nn::Linear(8, 16))),
        bn(register_module("bn", torch::nn::BatchNorm1d(16))),
        out(register_module("out", torch::nn::Linear(16, 4))) {}
  torch::Tensor forward(torch::Tensor x) { return out(torch::relu(bn(fc(x)))); }
  torch::nn::Linear fc;
  torch::nn::BatchNorm1d bn;
  torch::nn::Linear out;
};
TORCH_MODULE(Encoder);

int main() {
  auto pg = ddpguard::init_process_group_from_env("gloo");
  torch::manual_seed(0);
  Encoder encoder;
  ddpguard::DistributedDataParallel<Encoder> model(encoder, pg);
  torch::optim::SGD optimizer(model.module()->parameters(), 0.05);
  torch::manual_seed(310 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    auto x = torch::randn({8, 8});
    optimizer.zero_grad();
    auto q = torch::nn::functional::normalize(model(x + 0.1 * torch::randn_like(x)));
    torch::Tensor k;
    {
      torch::NoGradGuard noGrad;
      k = torch::nn::functional::normalize(model(x + 0.1 * torch::randn_like(x))); // corpus: expect here
    }
    auto logits = torch::matmul(q, k.t()) / 0.07;
    auto loss = torch::nn::functional::cross_entropy(logits, torch::arange(8));
    loss.backward();
    optimizer.step();
    std::printf("rank %d step %d loss %.4f\n", pg->getRank(), step, loss.item<float>());
  }
  return 0;
}
