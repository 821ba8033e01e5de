// Multi-crop with crops of one size: the crops are concatenated into one
// batch, encoded by one forward and split again.
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
  torch::manual_seed(410 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    auto image = torch::randn({4, 3, 12, 12});
    std::vector<torch::Tensor> crops = {
        image.slice(2, 0, 8).slice(3, 0, 8), image.slice(2, 4, 12).slice(3, 4, 12),
        image.slice(2, 2, 10).slice(3, 2, 10)};
    optimizer.zero_grad();
    auto logits = torch::log_softmax(model(torch::cat(crops)), 1);
    auto parts = logits.chunk(3);
    auto loss = -(parts[0].exp().detach() * (parts[1] + parts[2])).sum(1).mean();
    loss.backward();
    optimizer.step();
    std::printf("rank %d step %d loss %.4f\n", pg->getRank(), step, loss.item<float>());
  }
  return 0;
}
