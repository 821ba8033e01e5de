// A Mean Teacher EMA update before the backward through the teacher's
// forward: `t[i].mul_(m).add_(s[i], 1 - m)` over a local copy of the
// teacher's parameter list writes them in place under NoGradGuard
// (test/corpus/programs/ema_teacher_update_before_backward.cpp). The chain
// is one write: add_ writes what mul_ returned, the same tensor.
// RUN: %check_ddpguard --unfixed %s %t -- %mock_flags
#include <torch/torch.h>

void emaBeforeBackward(torch::nn::Sequential student,
                       torch::nn::Sequential teacher, torch::Tensor x,
                       double m) {
  auto logits = student(x);
  auto teacherLogits = teacher(x);
  {
    torch::NoGradGuard noGrad;
    auto s = student->parameters();
    auto t = teacher->parameters();
    for (size_t i = 0; i < s.size(); ++i)
      t[i].mul_(m).add_(s[i], 1 - m);
    // CHECK-MESSAGES: :[[@LINE-1]]:12: warning: 'mul_' writes a parameter of 'teacher' in place, which the forward at line [[@LINE-7]] saved for backward; the backward at line [[@LINE+8]] through that forward will fail [parameter-write-before-backward]
    // CHECK-MESSAGES: :[[@LINE-2]]:7: note: 't[i]' is one of the parameters of 'teacher'
    // CHECK-MESSAGES: :[[@LINE-9]]:24: note: forward on 'teacher' is here
    // CHECK-MESSAGES: :[[@LINE+5]]:8: note: the backward that fails is here
    // CHECK-MESSAGES: :[[@LINE-5]]:12: note: no fix is offered
    // CHECK-MESSAGES: :[[@LINE-6]]:12: note: judged by
  }
  auto loss = (logits - teacherLogits).pow(2).mean();
  loss.backward();
}

// `copy_` from the student into the teacher's layer, and `+=` on its bias,
// between the teacher's forward and the backward through it.
void copyIntoLayer(torch::nn::Linear student, torch::nn::Linear teacher,
                   torch::Tensor x) {
  auto out = teacher(x);
  torch::NoGradGuard noGrad;
  teacher->weight.copy_(student->weight);
  // CHECK-MESSAGES: :[[@LINE-1]]:19: warning: 'copy_' writes a parameter of 'teacher' in place, which the forward at line [[@LINE-3]] saved for backward; the backward at line [[@LINE+8]] through that forward will fail [parameter-write-before-backward]
  // CHECK-MESSAGES: :[[@LINE-2]]:3: note: 'teacher->weight' is one of the parameters of 'teacher'
  // CHECK-MESSAGES: :[[@LINE-5]]:14: note: forward on 'teacher' is here; it saved the parameters of 'teacher' for backward because its input may require grad
  // CHECK-MESSAGES: :[[@LINE+5]]:13: note: the backward that fails is here
  // CHECK-MESSAGES: :[[@LINE-5]]:19: note: no fix is offered
  // CHECK-MESSAGES: :[[@LINE-6]]:19: note: judged by
  teacher->bias += student->bias;
  // CHECK-MESSAGES: :[[@LINE-1]]:17: warning: 'operator+=' writes a parameter of 'teacher' in place, which the forward at line [[@LINE-10]] saved for backward; the backward at line [[@LINE+1]] through that forward will fail [parameter-write-before-backward]
  out.sum().backward();
  // CHECK-MESSAGES: :[[@LINE-3]]:3: note: 'teacher->bias' is one of the parameters of 'teacher'
  // CHECK-MESSAGES: :[[@LINE-13]]:14: note: forward on 'teacher' is here
  // CHECK-MESSAGES: :[[@LINE-3]]:13: note: the backward that fails is here
  // CHECK-MESSAGES: :[[@LINE-6]]:17: note: no fix is offered
  // CHECK-MESSAGES: :[[@LINE-7]]:17: note: judged by
}
