// Mean Teacher where the teacher is a second copy of the network whose
// parameters still require grad and whose output is not detached (the
// consistency loss then also sends gradients into the teacher, which no
// optimiser steps). The trainer updates the teacher's EMA as soon as it has
// taken the teacher's targets, inside the step, before the backward:
// `t.mul_(m).add_(s, 1 - m)` under NoGradGuard bumps the teacher's weights,
// which its forward saved (fc2's input requires grad).
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

#include <cstdio>

struct NetImpl : torch::nn::Module {
  NetImpl()
      : fc1(register_module("fc1", torch::nn::Linear(8, 16))),
        fc2(register_module("fc2", torch::nn::Linear(16, 5))) {}
  torch::Tensor forward(torch::Tensor x) { return fc2(torch::relu(fc1(x))); }
  torch::nn::Linear fc1;
  torch::nn::Linear fc2;
};
TORCH_MODULE(Net);

int main() {
  auto pg = ddpguard::init_process_group_from_env("gloo");
  torch::manual_seed(0);
  Net studentNet, teacher;
  {
    torch::NoGradGuard noGrad;
    auto s = studentNet->parameters();
    auto t = teacher->parameters();
    for (size_t i = 0; i < s.size(); ++i)
      t[i].copy_(s[i]);
  }
  ddpguard::DistributedDataParallel<Net> student(studentNet, pg);
  torch::optim::Adam optimizer(student.module()->parameters(), 1e-3);
  const double m = 0.99;
  torch::manual_seed(1920 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    auto x = torch::randn({8, 8});
    auto labels = torch::randint(0, 5, {8});
    auto logits = student(x + 0.1 * torch::randn_like(x));
    auto teacherLogits = teacher(x + 0.1 * torch::randn_like(x));
    {
      torch::NoGradGuard noGrad;
      auto s = student.module()->parameters();
      auto t = teacher->parameters();
      for (size_t i = 0; i < s.size(); ++i)
        t[i].mul_(m).add_(s[i], 1 - m); // corpus: expect here
    }
    auto loss = torch::nn::functional::cross_entropy(logits, labels) +
                torch::mse_loss(torch::softmax(logits, 1), torch::softmax(teacherLogits, 1));
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
    std::printf("rank %d step %d loss %.4f\n", pg->getRank(), step, loss.item<float>());
  }
  return 0;
}
