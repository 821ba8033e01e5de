// MoCo: the query encoder is DDP and runs once per step; the key encoder is
// a separate momentum copy, run under NoGradGuard. Keys come from a queue.
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
  Encoder queryEncoder;
  Encoder keyEncoder;
  ddpguard::DistributedDataParallel<Encoder> query(queryEncoder, pg);
  torch::optim::SGD optimizer(query.module()->parameters(), 0.05);
  torch::manual_seed(300 + pg->getRank());
  auto queue = torch::nn::functional::normalize(torch::randn({16, 4}));
  for (int step = 0; step < 3; ++step) {
    auto x = torch::randn({8, 8});
    auto xq = x + 0.1 * torch::randn_like(x);
    auto xk = x + 0.1 * torch::randn_like(x);
    torch::Tensor k;
    {
      torch::NoGradGuard noGrad;
      k = torch::nn::functional::normalize(keyEncoder(xk));
    }
    optimizer.zero_grad();
    auto q = torch::nn::functional::normalize(query(xq));
    auto positive = (q * k).sum(1, true);
    auto negative = torch::matmul(q, queue.t());
    auto logits = torch::cat({positive, negative}, 1) / 0.07;
    auto loss = torch::nn::functional::cross_entropy(
        logits, torch::zeros({8}, torch::kLong));
    loss.backward();
    optimizer.step();
    {
      torch::NoGradGuard noGrad;
      auto qp = query.module()->parameters();
      auto kp = keyEncoder->parameters();
      for (size_t i = 0; i < qp.size(); ++i)
        kp[i].mul_(0.99).add_(0.01 * qp[i]);
      queue = torch::cat({k, queue}).slice(0, 0, 16);
    }
    std::printf("rank %d step %d loss %.4f\n", pg->getRank(), step, loss.item<float>());
  }
  return 0;
}
