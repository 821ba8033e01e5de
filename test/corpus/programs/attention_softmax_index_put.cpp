// Self-attention that removes the attention to a padding position after
// the softmax by indexed assignment into the weights,
// `attn.index_put_({Slice(), Slice(), pad}, 0)`, instead of masking the
// scores before it: softmax saves its output for backward, and the indexed
// write modifies it. The DDP training step fails at its backward.
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdio>

using torch::indexing::Slice;

struct AttentionImpl : torch::nn::Module {
  AttentionImpl()
      : qkv(register_module("qkv", torch::nn::Linear(8, 24))),
        out(register_module("out", torch::nn::Linear(8, 3))) {}
  torch::Tensor forward(torch::Tensor x, int64_t pad) {
    auto parts = qkv(x).chunk(3, -1);
    auto scores = torch::matmul(parts[0], parts[1].transpose(1, 2)) / std::sqrt(8.0);
    auto attn = torch::softmax(scores, -1);
    attn.index_put_({Slice(), Slice(), pad}, 0.0); // corpus: expect here
    return out(torch::matmul(attn, parts[2]).mean(1));
  }
  torch::nn::Linear qkv, out;
};
TORCH_MODULE(Attention);

int main() {
  auto pg = ddpguard::init_process_group_from_env("gloo");
  torch::manual_seed(0);
  Attention net;
  ddpguard::DistributedDataParallel<Attention> model(net, pg);
  torch::optim::Adam optimizer(model.module()->parameters(), 1e-3);
  const int64_t pad = 4;
  torch::manual_seed(1990 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    auto x = torch::randn({4, 5, 8});
    auto labels = torch::randint(0, 3, {4});
    optimizer.zero_grad();
    auto loss = torch::nn::functional::cross_entropy(model(x, pad), labels);
    loss.backward();
    optimizer.step();
    std::printf("rank %d step %d loss %.4f\n", pg->getRank(), step, loss.item<float>());
  }
  return 0;
}
