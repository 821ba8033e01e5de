// Knowledge distillation: a frozen teacher (its own DDP object, run under
// NoGradGuard in eval mode) and a student DDP trained on the teacher's soft
// targets. Each DDP object runs once per step.
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

#include <cstdio>

struct NetImpl : torch::nn::Module {
  explicit NetImpl(int width)
      : fc1(register_module("fc1", torch::nn::Linear(8, width))),
        bn(register_module("bn", torch::nn::BatchNorm1d(width))),
        fc2(register_module("fc2", torch::nn::Linear(width, 5))) {}
  torch::Tensor forward(torch::Tensor x) { return fc2(torch::relu(bn(fc1(x)))); }
  torch::nn::Linear fc1;
  torch::nn::BatchNorm1d bn;
  torch::nn::Linear fc2;
};
TORCH_MODULE(Net);

int main() {
  auto pg = ddpguard::init_process_group_from_env("gloo");
  torch::manual_seed(0);
  Net teacherNet(32), studentNet(8);
  teacherNet->eval();
  ddpguard::DistributedDataParallel<Net> teacher(teacherNet, pg);
  ddpguard::DistributedDataParallel<Net> student(studentNet, pg);
  torch::optim::SGD optimizer(student.module()->parameters(), 0.05);
  torch::manual_seed(800 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    auto x = torch::randn({8, 8});
    torch::Tensor soft;
    {
      torch::NoGradGuard noGrad;
      soft = torch::softmax(teacher(x) / 2.0, 1);
    }
    optimizer.zero_grad();
    auto logits = student(x);
    auto loss = torch::kl_div(torch::log_softmax(logits / 2.0, 1), soft,
                              at::Reduction::Mean);
    loss.backward();
    optimizer.step();
    std::printf("rank %d step %d loss %.4f\n", pg->getRank(), step, loss.item<float>());
  }
  return 0;
}
