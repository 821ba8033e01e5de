// A recurrent cell with BatchNorm, called once per time step through DDP
// (pytorch/pytorch#73332); the loss sums over the steps and one backward
// runs after the sequence.
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

#include <cstdio>

struct CellImpl : torch::nn::Module {
  CellImpl()
      : in(register_module("in", torch::nn::Linear(6, 12))),
        hid(register_module("hid", torch::nn::Linear(12, 12))),
        bn(register_module("bn", torch::nn::BatchNorm1d(12))) {}
  torch::Tensor forward(torch::Tensor x, torch::Tensor h) {
    return torch::tanh(bn(in(x) + hid(h)));
  }
  torch::nn::Linear in, hid;
  torch::nn::BatchNorm1d bn;
};
TORCH_MODULE(Cell);

int main() {
  auto pg = ddpguard::init_process_group_from_env("gloo");
  torch::manual_seed(0);
  Cell cell;
  torch::nn::Linear readout(12, 1);
  ddpguard::DistributedDataParallel<Cell> rnn(cell, pg);
  std::vector<torch::Tensor> params = rnn.module()->parameters();
  for (auto &p : readout->parameters())
    params.push_back(p);
  torch::optim::SGD optimizer(params, 0.05);
  torch::manual_seed(700 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    auto sequence = torch::randn({5, 4, 6});
    auto targets = torch::randn({5, 4, 1});
    optimizer.zero_grad();
    auto h = torch::zeros({4, 12});
    auto loss = torch::zeros({});
    for (int t = 0; t < sequence.size(0); ++t) {
      h = rnn(sequence[t], h); // corpus: expect here
      loss = loss + torch::mse_loss(readout(h), targets[t]);
    }
    loss.backward();
    optimizer.step();
    std::printf("rank %d step %d loss %.4f\n", pg->getRank(), step, loss.item<float>());
  }
  return 0;
}
