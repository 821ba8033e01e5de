// Self-distillation with one network: the clean input is run first under
// NoGradGuard as the teacher, then the noisy input with grad as the
// student, on the same DDP object.
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

#include <cstdio>

struct NetImpl : torch::nn::Module {
  NetImpl()
      : fc1(register_module("fc1", torch::nn::Linear(8, 16))),
        bn(register_module("bn", torch::nn::BatchNorm1d(16))),
        fc2(register_module("fc2", torch::nn::Linear(16, 5))) {}
  torch::Tensor forward(torch::Tensor x) { return fc2(torch::relu(bn(fc1(x)))); }
  torch::nn::Linear fc1;
  torch::nn::BatchNorm1d bn;
  torch::nn::Linear fc2;
};
TORCH_MODULE(Net);

int main() {
  auto pg = ddpguard::init_process_group_from_env("gloo");
  torch::manual_seed(0);
  Net net;
  ddpguard::DistributedDataParallel<Net> model(net, pg);
  torch::optim::SGD optimizer(model.module()->parameters(), 0.05);
  torch::manual_seed(810 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    auto x = torch::randn({8, 8});
    auto labels = torch::randint(0, 5, {8});
    torch::Tensor teacherProbs;
    {
      torch::NoGradGuard noGrad;
      teacherProbs = torch::softmax(model(x), 1);
    }
    optimizer.zero_grad();
    auto logits = model(x + 0.2 * torch::randn_like(x));
    auto loss = torch::nn::functional::cross_entropy(logits, labels) +
                torch::kl_div(torch::log_softmax(logits, 1), teacherProbs, at::Reduction::Mean);
    loss.backward();
    optimizer.step();
    std::printf("rank %d step %d loss %.4f\n", pg->getRank(), step, loss.item<float>());
  }
  return 0;
}
