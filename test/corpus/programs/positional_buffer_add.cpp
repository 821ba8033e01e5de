// A tiny sequence encoder with a sinusoidal positional-encoding buffer
// added to the embeddings; source and target sequences are encoded by two
// forwards and compared. The buffer is only added, never saved.
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdio>

struct SeqEncoderImpl : torch::nn::Module {
  SeqEncoderImpl()
      : embed(register_module("embed", torch::nn::Embedding(20, 8))),
        norm(register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({8})))),
        proj(register_module("proj", torch::nn::Linear(8, 8))) {
    auto position = torch::arange(16).unsqueeze(1).to(torch::kFloat);
    auto freq = torch::exp(torch::arange(0, 8, 2).to(torch::kFloat) * (-std::log(1e4) / 8));
    auto pe = torch::zeros({16, 8});
    pe.index_put_({torch::indexing::Slice(), torch::indexing::Slice(0, 8, 2)},
                  torch::sin(position * freq));
    pe.index_put_({torch::indexing::Slice(), torch::indexing::Slice(1, 8, 2)},
                  torch::cos(position * freq));
    positions = register_buffer("positions", pe);
  }
  torch::Tensor forward(torch::Tensor tokens) {
    auto h = embed(tokens) + positions.slice(0, 0, tokens.size(1));
    return proj(norm(h)).mean(1);
  }
  torch::nn::Embedding embed;
  torch::nn::LayerNorm norm;
  torch::nn::Linear proj;
  torch::Tensor positions;
};
TORCH_MODULE(SeqEncoder);

int main() {
  auto pg = ddpguard::init_process_group_from_env("gloo");
  torch::manual_seed(0);
  SeqEncoder net;
  ddpguard::DistributedDataParallel<SeqEncoder> model(net, pg);
  torch::optim::Adam optimizer(model.module()->parameters(), 1e-3);
  torch::manual_seed(1220 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    auto source = torch::randint(0, 20, {4, 10});
    auto target = torch::randint(0, 20, {4, 10});
    optimizer.zero_grad();
    auto zs = model(source);
    auto zt = model(target);
    auto loss = 1 - torch::cosine_similarity(zs, zt, 1).mean();
    loss.backward();
    optimizer.step();
    std::printf("rank %d step %d loss %.4f\n", pg->getRank(), step, loss.item<float>());
  }
  return 0;
}
