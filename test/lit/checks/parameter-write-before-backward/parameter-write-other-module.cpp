// A write to one module's parameters does not touch what a forward of
// another module saved: the EMA writes the teacher, whose forward ran
// without grad (saving nothing), while only the student's graph is live.
// RUN: %check_ddpguard %s %t -- %mock_flags
#include <torch/torch.h>

void teacherWithoutGrad(torch::nn::Sequential student,
                        torch::nn::Sequential teacher, torch::Tensor x,
                        double m) {
  auto logits = student(x);
  torch::Tensor targets;
  {
    torch::NoGradGuard noGrad;
    targets = teacher(x);
    auto s = student->parameters();
    auto t = teacher->parameters();
    for (size_t i = 0; i < s.size(); ++i)
      t[i].mul_(m).add_(s[i], 1 - m);
  }
  (logits - targets).pow(2).mean().backward();
}

// Clipping the generator's weights while only the critic's graph is live.
void clipOther(torch::nn::Sequential G, torch::nn::Sequential critic,
               torch::Tensor real, double clip) {
  auto score = critic(real).mean();
  for (auto &p : G->parameters())
    p.clamp_(-clip, clip);
  score.backward();
}
