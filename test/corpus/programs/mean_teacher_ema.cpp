// Mean Teacher: the student is DDP; the teacher is a plain EMA copy of its
// weights evaluated under NoGradGuard, so the DDP object runs once per step.
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
  Net studentNet, teacherNet;
  ddpguard::DistributedDataParallel<Net> student(studentNet, pg);
  torch::optim::Adam optimizer(student.module()->parameters(), 1e-3);
  torch::manual_seed(930 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    auto x = torch::randn({8, 8});
    auto labels = torch::randint(0, 5, {8});
    torch::Tensor teacherProbs;
    {
      torch::NoGradGuard noGrad;
      teacherProbs = torch::softmax(teacherNet(x + 0.1 * torch::randn_like(x)), 1);
    }
    optimizer.zero_grad();
    auto logits = student(x + 0.1 * torch::randn_like(x));
    auto loss = torch::nn::functional::cross_entropy(logits, labels) +
                torch::mse_loss(torch::softmax(logits, 1), teacherProbs);
    loss.backward();
    optimizer.step();
    {
      torch::NoGradGuard noGrad;
      auto s = student.module()->parameters();
      auto t = teacherNet->parameters();
      for (size_t i = 0; i < s.size(); ++i)
        t[i].mul_(0.9).add_(0.1 * s[i]);
    }
    std::printf("rank %d step %d loss %.4f\n", pg->getRank(), step, loss.item<float>());
  }
  return 0;
}
