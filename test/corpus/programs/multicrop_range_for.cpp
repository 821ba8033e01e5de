// SwAV/DINO-style multi-crop: two global crops and two local crops of
// different sizes, each encoded by its own forward in a range-for, then one
// backward over the swapped-prediction loss.
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

#include <cstdio>
#include <vector>

struct CropNetImpl : torch::nn::Module {
  CropNetImpl()
      : conv(register_module("conv", torch::nn::Conv2d(3, 8, 3))),
        bn(register_module("bn", torch::nn::BatchNorm2d(8))),
        head(register_module("head", torch::nn::Linear(8, 4))) {}
  torch::Tensor forward(torch::Tensor x) {
    auto h = torch::relu(bn(conv(x)));
    return head(h.mean({2, 3}));
  }
  torch::nn::Conv2d conv;
  torch::nn::BatchNorm2d bn;
  torch::nn::Linear head;
};
TORCH_MODULE(CropNet);

int main() {
  auto pg = ddpguard::init_process_group_from_env("gloo");
  torch::manual_seed(0);
  CropNet net;
  ddpguard::DistributedDataParallel<CropNet> model(net, pg);
  torch::optim::SGD optimizer(model.module()->parameters(), 0.05);
  torch::manual_seed(400 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    auto image = torch::randn({4, 3, 12, 12});
    std::vector<torch::Tensor> crops = {
        image.slice(2, 0, 10).slice(3, 0, 10), image.slice(2, 2, 12).slice(3, 2, 12),
        image.slice(2, 0, 6).slice(3, 0, 6), image.slice(2, 6, 12).slice(3, 6, 12)};
    optimizer.zero_grad();
    std::vector<torch::Tensor> outputs;
    for (const auto &crop : crops)
      outputs.push_back(torch::log_softmax(model(crop), 1)); // corpus: expect here
    auto loss = torch::zeros({});
    for (size_t i = 1; i < outputs.size(); ++i)
      loss = loss - (outputs[0].exp().detach() * outputs[i]).sum(1).mean();
    loss.backward();
    optimizer.step();
    std::printf("rank %d step %d loss %.4f\n", pg->getRank(), step, loss.item<float>());
  }
  return 0;
}
