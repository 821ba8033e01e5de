// A style encoder with InstanceNorm1d tracking running statistics: the
// module has buffers, but instance_norm saves per-instance copies of the
// statistics, not the buffers, so two forwards before one backward train.
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

#include <cstdio>

struct StyleEncoderImpl : torch::nn::Module {
  StyleEncoderImpl()
      : conv(register_module("conv", torch::nn::Conv1d(3, 8, 3))),
        norm(register_module("norm", torch::nn::InstanceNorm1d(
                                         torch::nn::InstanceNorm1dOptions(8).track_running_stats(true)))),
        head(register_module("head", torch::nn::Linear(8, 4))) {}
  torch::Tensor forward(torch::Tensor x) {
    return head(torch::relu(norm(conv(x))).mean(2));
  }
  torch::nn::Conv1d conv;
  torch::nn::InstanceNorm1d norm;
  torch::nn::Linear head;
};
TORCH_MODULE(StyleEncoder);

int main() {
  auto pg = ddpguard::init_process_group_from_env("gloo");
  torch::manual_seed(0);
  StyleEncoder encoder;
  ddpguard::DistributedDataParallel<StyleEncoder> model(encoder, pg);
  torch::optim::SGD optimizer(model.module()->parameters(), 0.05);
  torch::manual_seed(1910 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    auto content = torch::randn({4, 3, 12});
    auto style = torch::randn({4, 3, 12});
    optimizer.zero_grad();
    auto zc = model(content);
    auto zs = model(style);
    auto loss = torch::mse_loss(zc, zs.flip({0}));
    loss.backward();
    optimizer.step();
    std::printf("rank %d step %d loss %.4f\n", pg->getRank(), step, loss.item<float>());
  }
  return 0;
}
