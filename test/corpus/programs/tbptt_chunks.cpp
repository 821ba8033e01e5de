// Truncated BPTT: a long sequence is cut into chunks; the DDP model runs
// once per chunk with the detached hidden state of the previous chunk, and
// each chunk is backpropagated before the next one.
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

#include <cstdio>
#include <tuple>

struct ChunkModelImpl : torch::nn::Module {
  ChunkModelImpl()
      : in(register_module("in", torch::nn::Linear(6, 12))),
        hid(register_module("hid", torch::nn::Linear(12, 12))),
        bn(register_module("bn", torch::nn::BatchNorm1d(12))),
        readout(register_module("readout", torch::nn::Linear(12, 1))) {}
  std::tuple<torch::Tensor, torch::Tensor> forward(torch::Tensor chunk, torch::Tensor h) {
    std::vector<torch::Tensor> outputs;
    for (int t = 0; t < chunk.size(0); ++t) {
      h = torch::tanh(bn(in(chunk[t]) + hid(h)));
      outputs.push_back(readout(h));
    }
    return {torch::stack(outputs), h};
  }
  torch::nn::Linear in, hid;
  torch::nn::BatchNorm1d bn;
  torch::nn::Linear readout;
};
TORCH_MODULE(ChunkModel);

int main() {
  auto pg = ddpguard::init_process_group_from_env("gloo");
  torch::manual_seed(0);
  ChunkModel net;
  ddpguard::DistributedDataParallel<ChunkModel> model(net, pg);
  torch::optim::SGD optimizer(model.module()->parameters(), 0.05);
  torch::manual_seed(720 + pg->getRank());
  auto sequence = torch::randn({9, 4, 6});
  auto targets = torch::randn({9, 4, 1});
  auto h = torch::zeros({4, 12});
  for (int chunk = 0; chunk < 3; ++chunk) {
    optimizer.zero_grad();
    auto [outputs, hNext] = model(sequence.slice(0, 3 * chunk, 3 * chunk + 3), h.detach());
    auto loss = torch::mse_loss(outputs, targets.slice(0, 3 * chunk, 3 * chunk + 3));
    loss.backward();
    optimizer.step();
    h = hNext;
    std::printf("rank %d chunk %d loss %.4f\n", pg->getRank(), chunk, loss.item<float>());
  }
  return 0;
}
