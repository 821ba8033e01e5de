// A sequence encoder that zeroes the hidden activations of the first,
// padding, time step by assignment, `h[0] = 0` (Python's `h[0] = 0`, a
// fill_ through a view): the ReLU saved its output for backward, and the
// assignment writes into it.
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

#include <cstdio>

struct EncoderImpl : torch::nn::Module {
  EncoderImpl()
      : fc(register_module("fc", torch::nn::Linear(6, 12))),
        head(register_module("head", torch::nn::Linear(12, 2))) {}
  // x: [time, batch, features]; time step 0 is padding.
  torch::Tensor forward(torch::Tensor x) {
    auto h = torch::relu(fc(x));
    h[0] = 0; // corpus: expect here
    return head(h.mean(0));
  }
  torch::nn::Linear fc, head;
};
TORCH_MODULE(Encoder);

int main() {
  auto pg = ddpguard::init_process_group_from_env("gloo");
  torch::manual_seed(0);
  Encoder encoder;
  torch::optim::Adam optimizer(encoder->parameters(), 1e-3);
  torch::manual_seed(2000 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    auto x = torch::randn({5, 4, 6});
    auto labels = torch::randint(0, 2, {4});
    optimizer.zero_grad();
    auto loss = torch::nn::functional::cross_entropy(encoder(x), labels);
    loss.backward();
    optimizer.step();
    std::printf("rank %d step %d loss %.4f\n", pg->getRank(), step, loss.item<float>());
  }
  return 0;
}
