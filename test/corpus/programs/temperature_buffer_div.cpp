// A classifier whose logits are divided by a temperature held in a buffer
// (calibration): `div` saves its divisor for the gradient of the logits, so
// two augmented views forwarded before one consistency backward fail.
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

#include <cstdio>

struct CalibratedImpl : torch::nn::Module {
  CalibratedImpl()
      : body(register_module("body", torch::nn::Linear(8, 16))),
        head(register_module("head", torch::nn::Linear(16, 4))) {
    temperature = register_buffer("temperature", torch::full({1}, 2.0));
  }
  torch::Tensor forward(torch::Tensor x) {
    return head(torch::relu(body(x))) / temperature;
  }
  torch::nn::Linear body, head;
  torch::Tensor temperature;
};
TORCH_MODULE(Calibrated);

int main() {
  auto pg = ddpguard::init_process_group_from_env("gloo");
  torch::manual_seed(0);
  Calibrated net;
  ddpguard::DistributedDataParallel<Calibrated> model(net, pg);
  torch::optim::SGD optimizer(model.module()->parameters(), 0.05);
  torch::manual_seed(1940 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    auto x = torch::randn({6, 8});
    auto weak = x + 0.05 * torch::randn_like(x);
    auto strong = x + 0.3 * torch::randn_like(x);
    optimizer.zero_grad();
    auto pw = model(weak);
    auto ps = model(strong); // corpus: expect here
    auto loss = torch::mse_loss(torch::softmax(ps, 1), torch::softmax(pw, 1).detach()) +
                pw.pow(2).mean() * 1e-3;
    loss.backward();
    optimizer.step();
    std::printf("rank %d step %d loss %.4f\n", pg->getRank(), step, loss.item<float>());
  }
  return 0;
}
