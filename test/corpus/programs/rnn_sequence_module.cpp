// The same recurrent cell, but the time loop lives inside the module's
// forward: DDP is called once per sequence, then one backward.
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

#include <cstdio>

struct SequenceModelImpl : torch::nn::Module {
  SequenceModelImpl()
      : in(register_module("in", torch::nn::Linear(6, 12))),
        hid(register_module("hid", torch::nn::Linear(12, 12))),
        bn(register_module("bn", torch::nn::BatchNorm1d(12))),
        readout(register_module("readout", torch::nn::Linear(12, 1))) {}
  torch::Tensor forward(torch::Tensor sequence) {
    auto h = torch::zeros({sequence.size(1), 12});
    std::vector<torch::Tensor> outputs;
    for (int t = 0; t < sequence.size(0); ++t) {
      h = torch::tanh(bn(in(sequence[t]) + hid(h)));
      outputs.push_back(readout(h));
    }
    return torch::stack(outputs);
  }
  torch::nn::Linear in, hid;
  torch::nn::BatchNorm1d bn;
  torch::nn::Linear readout;
};
TORCH_MODULE(SequenceModel);

int main() {
  auto pg = ddpguard::init_process_group_from_env("gloo");
  torch::manual_seed(0);
  SequenceModel net;
  ddpguard::DistributedDataParallel<SequenceModel> model(net, pg);
  torch::optim::SGD optimizer(model.module()->parameters(), 0.05);
  torch::manual_seed(710 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    auto sequence = torch::randn({5, 4, 6});
    auto targets = torch::randn({5, 4, 1});
    optimizer.zero_grad();
    auto loss = torch::mse_loss(model(sequence), targets);
    loss.backward();
    optimizer.step();
    std::printf("rank %d step %d loss %.4f\n", pg->getRank(), step, loss.item<float>());
  }
  return 0;
}
