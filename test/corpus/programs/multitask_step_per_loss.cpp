// Multi-task training that steps after each task's loss ("alternate the
// tasks inside the step"): the DDP shared encoder feeds two heads, the first
// task's loss is backpropagated with retain_graph=true so the second can use
// the same forward, the optimiser over every parameter steps, and then the
// second task's loss backpropagates through the encoder's forward. That
// forward saved the encoder's second-layer weight (its input requires
// grad), and Adam's step wrote it.
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

#include <cstdio>

struct EncoderImpl : torch::nn::Module {
  EncoderImpl()
      : fc1(register_module("fc1", torch::nn::Linear(10, 32))),
        fc2(register_module("fc2", torch::nn::Linear(32, 16))) {}
  torch::Tensor forward(torch::Tensor x) { return torch::relu(fc2(torch::relu(fc1(x)))); }
  torch::nn::Linear fc1;
  torch::nn::Linear fc2;
};
TORCH_MODULE(Encoder);

int main() {
  auto pg = ddpguard::init_process_group_from_env("gloo");
  torch::manual_seed(0);
  Encoder encoderNet;
  ddpguard::DistributedDataParallel<Encoder> encoder(encoderNet, pg);
  torch::nn::Linear headA(16, 3), headB(16, 1);
  std::vector<torch::Tensor> params = encoder.module()->parameters();
  for (auto &p : headA->parameters())
    params.push_back(p);
  for (auto &p : headB->parameters())
    params.push_back(p);
  torch::optim::Adam optimizer(params, 1e-3);
  torch::manual_seed(2050 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    auto x = torch::randn({8, 10});
    auto labelsA = torch::randint(0, 3, {8});
    auto targetB = torch::randn({8, 1});
    auto features = encoder(x);
    auto lossA = torch::nn::functional::cross_entropy(headA(features), labelsA);
    optimizer.zero_grad();
    lossA.backward({}, /*retain_graph=*/true);
    optimizer.step(); // corpus: expect here
    auto lossB = torch::mse_loss(headB(features), targetB);
    optimizer.zero_grad();
    lossB.backward();
    optimizer.step();
    std::printf("rank %d step %d lossA %.4f lossB %.4f\n", pg->getRank(), step,
                lossA.item<float>(), lossB.item<float>());
  }
  return 0;
}
