// A write to parameters after the last backward through the forwards that
// saved them breaks nothing: the EMA update where Mean Teacher's reference
// code has it (test/corpus/programs/ema_teacher_update_after_step.cpp), and
// clipping once per iteration after the backward.
// RUN: %check_ddpguard %s %t -- %mock_flags
#include <torch/torch.h>

void emaAfterBackward(torch::nn::Sequential student,
                      torch::nn::Sequential teacher,
                      std::vector<torch::Tensor> batches, double m) {
  for (const auto &x : batches) {
    auto loss = (student(x) - teacher(x)).pow(2).mean();
    loss.backward();
    torch::NoGradGuard noGrad;
    auto s = student->parameters();
    auto t = teacher->parameters();
    for (size_t i = 0; i < s.size(); ++i)
      t[i].mul_(m).add_(s[i], 1 - m);
  }
}

void clipAfterBackward(torch::nn::Sequential critic,
                       std::vector<torch::Tensor> batches, double clip) {
  for (const auto &x : batches) {
    critic(x).mean().backward();
    torch::NoGradGuard noGrad;
    for (auto &p : critic->parameters())
      p.clamp_(-clip, clip);
  }
}
