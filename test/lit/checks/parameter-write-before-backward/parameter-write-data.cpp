// Writes through `.data()` do not bump the parameters' version counters
// (docs/ground-truth.md, "Optimizer steps and version counters"): the
// backward through the earlier forward runs, with the written weights
// (test/corpus/programs/wgan_clip_data_clamp.cpp, ema_teacher_data_update).
// A write to the gradient (`p.grad()`) writes no parameter either. The
// writes through `.data()` are silent-write-before-backward's.
// RUN: %check_ddpguard --unfixed %s %t -- %mock_flags
#include <torch/torch.h>

void clipThroughData(torch::nn::Sequential critic, torch::Tensor real,
                     double clip) {
  auto score = critic(real).mean();
  score.backward({}, /*retain_graph=*/true);
  for (auto &p : critic->parameters())
    p.data().clamp_(-clip, clip);
  // CHECK-MESSAGES: :[[@LINE-1]]:14: warning: 'clamp_' writes 'p' (the parameters of 'critic') through .data() in place{{.*}}[silent-write-before-backward]
  score.backward();
}

void emaThroughData(torch::nn::Sequential student,
                    torch::nn::Sequential teacher, torch::Tensor x, double m) {
  auto teacherLogits = teacher(x);
  auto s = student->parameters();
  auto t = teacher->parameters();
  for (size_t i = 0; i < s.size(); ++i)
    t[i].data().mul_(m).add_(s[i].data(), 1 - m);
  // CHECK-MESSAGES: :[[@LINE-1]]:17: warning: 'mul_' writes 't[i]' (the parameters of 'teacher') through .data() in place{{.*}}[silent-write-before-backward]
  teacherLogits.sum().backward();
}
