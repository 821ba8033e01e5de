// Truncated BPTT with the cell called per time step: within each chunk of
// three steps the DDP cell runs three times before the chunk's backward.
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

#include <cstdio>

struct CellImpl : torch::nn::Module {
  CellImpl()
      : in(register_module("in", torch::nn::Linear(6, 12))),
        hid(register_module("hid", torch::nn::Linear(12, 12))),
        bn(register_module("bn", torch::nn::BatchNorm1d(12))),
        readout(register_module("readout", torch::nn::Linear(12, 1))) {}
  torch::Tensor forward(torch::Tensor x, torch::Tensor h) {
    return torch::tanh(bn(in(x) + hid(h)));
  }
  torch::nn::Linear in, hid;
  torch::nn::BatchNorm1d bn;
  torch::nn::Linear readout;
};
TORCH_MODULE(Cell);

int main() {
  auto pg = ddpguard::init_process_group_from_env("gloo");
  torch::manual_seed(0);
  Cell cell;
  ddpguard::DistributedDataParallel<Cell> model(cell, pg);
  torch::optim::SGD optimizer(model.module()->parameters(), 0.05);
  torch::manual_seed(730 + pg->getRank());
  auto sequence = torch::randn({9, 4, 6});
  auto targets = torch::randn({9, 4, 1});
  auto h = torch::zeros({4, 12});
  for (int chunk = 0; chunk < 3; ++chunk) {
    optimizer.zero_grad();
    h = h.detach();
    auto loss = torch::zeros({});
    for (int t = 3 * chunk; t < 3 * chunk + 3; ++t) {
      h = model(sequence[t], h); // corpus: expect here
      loss = loss + torch::mse_loss(model.module()->readout(h), targets[t]);
    }
    loss.backward();
    optimizer.step();
    std::printf("rank %d chunk %d loss %.4f\n", pg->getRank(), chunk, loss.item<float>());
  }
  return 0;
}
