// attention_softmax_index_put masked the usual way: the scores of the
// padding position are filled in place with a large negative value before
// the softmax, `scores.masked_fill_(mask, -1e9)`. The scores are the output
// of a division by a constant, which saves nothing of them, so the in-place
// fill clobbers nothing a backward needs. Trains.
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdio>

struct AttentionImpl : torch::nn::Module {
  AttentionImpl()
      : qkv(register_module("qkv", torch::nn::Linear(8, 24))),
        out(register_module("out", torch::nn::Linear(8, 3))) {}
  torch::Tensor forward(torch::Tensor x, torch::Tensor mask) {
    auto parts = qkv(x).chunk(3, -1);
    auto scores = torch::matmul(parts[0], parts[1].transpose(1, 2)) / std::sqrt(8.0);
    scores.masked_fill_(mask, -1e9);
    auto attn = torch::softmax(scores, -1);
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
  auto mask = torch::zeros({1, 1, 5}, torch::kBool);
  mask.index_put_({0, 0, 4}, true);
  torch::manual_seed(2010 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    auto x = torch::randn({4, 5, 8});
    auto labels = torch::randint(0, 3, {4});
    optimizer.zero_grad();
    auto loss = torch::nn::functional::cross_entropy(model(x, mask), labels);
    loss.backward();
    optimizer.step();
    std::printf("rank %d step %d loss %.4f\n", pg->getRank(), step, loss.item<float>());
  }
  return 0;
}
