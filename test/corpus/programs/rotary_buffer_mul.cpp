// A sequence encoder whose positional table multiplies the embeddings (a
// rotary-style cos/sin modulation held in buffers): the product saves the
// buffers for backward, and query and key sequences are encoded by two
// forwards before one backward.
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

#include <cstdio>

struct RotaryEncoderImpl : torch::nn::Module {
  RotaryEncoderImpl()
      : embed(register_module("embed", torch::nn::Embedding(20, 8))),
        proj(register_module("proj", torch::nn::Linear(8, 8))) {
    auto angles = torch::arange(16).unsqueeze(1).to(torch::kFloat) *
                  torch::linspace(0.1, 1.0, 8).unsqueeze(0);
    cosTable = register_buffer("cos_table", torch::cos(angles));
    sinTable = register_buffer("sin_table", torch::sin(angles));
  }
  torch::Tensor forward(torch::Tensor tokens) {
    auto h = embed(tokens);
    auto n = tokens.size(1);
    auto rotated = h * cosTable.slice(0, 0, n) + h.flip({2}) * sinTable.slice(0, 0, n);
    return proj(rotated).mean(1);
  }
  torch::nn::Embedding embed;
  torch::nn::Linear proj;
  torch::Tensor cosTable, sinTable;
};
TORCH_MODULE(RotaryEncoder);

int main() {
  auto pg = ddpguard::init_process_group_from_env("gloo");
  torch::manual_seed(0);
  RotaryEncoder net;
  ddpguard::DistributedDataParallel<RotaryEncoder> model(net, pg);
  torch::optim::Adam optimizer(model.module()->parameters(), 1e-3);
  torch::manual_seed(1230 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    auto queries = torch::randint(0, 20, {4, 10});
    auto keys = torch::randint(0, 20, {4, 10});
    optimizer.zero_grad();
    auto q = model(queries);
    auto k = model(keys); // corpus: expect here
    auto loss = torch::nn::functional::cross_entropy(torch::matmul(q, k.t()), torch::arange(4));
    loss.backward();
    optimizer.step();
    std::printf("rank %d step %d loss %.4f\n", pg->getRank(), step, loss.item<float>());
  }
  return 0;
}
