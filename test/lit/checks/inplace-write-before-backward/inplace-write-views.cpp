// A view, a handle copy and detach() share the storage and the version
// counter: a write through any of them bumps what the op saved. A clone is
// a new tensor. An op makes no autograd node (and saves nothing) when no
// input requires grad or grad mode is off. NOLINT silences the check alone.
// RUN: %check_ddpguard --unfixed %s %t -- %mock_flags
#include <torch/torch.h>

void views(torch::nn::Linear fc, torch::Tensor x) {
  auto y = torch::sigmoid(fc(x));
  auto flat = y.view({-1});
  torch::Tensor copy = y;
  flat.mul_(2);
  // CHECK-MESSAGES: :[[@LINE-1]]:8: warning: 'mul_' writes 'flat' in place, which 'torch::sigmoid(fc(x))' at line [[@LINE-4]] saved for backward; the backward at line [[@LINE+11]] through it will fail [inplace-write-before-backward]
  // CHECK-MESSAGES: :[[@LINE-5]]:12: note: 'torch::sigmoid(fc(x))' saved the tensor for backward here
  // CHECK-MESSAGES: :[[@LINE+9]]:11: note: the backward that fails is here
  // CHECK-MESSAGES: :[[@LINE-4]]:8: note: no fix is offered: 'flat' shares its storage with the tensor it was made from at line [[@LINE-6]]: written out of place, that tensor would keep its old values
  // CHECK-MESSAGES: :[[@LINE-5]]:8: note: judged by LibTorch 2.11.0, assumed
  copy.detach().zero_();
  // CHECK-MESSAGES: :[[@LINE-1]]:17: warning: 'zero_' writes 'copy.detach()' in place, which 'torch::sigmoid(fc(x))' at line [[@LINE-10]] saved for backward; the backward at line [[@LINE+5]] through it will fail [inplace-write-before-backward]
  // CHECK-MESSAGES: :[[@LINE-11]]:12: note: 'torch::sigmoid(fc(x))' saved the tensor for backward here
  // CHECK-MESSAGES: :[[@LINE+3]]:11: note: the backward that fails is here
  // CHECK-MESSAGES: :[[@LINE-4]]:17: note: no fix is offered: 'copy.detach()' is not a tensor variable of this function: written out of place, the tensor it names (a view, a parameter, a member) would keep its old values
  // CHECK-MESSAGES: :[[@LINE-5]]:17: note: judged by LibTorch 2.11.0, assumed
  y.sum().backward();
  auto z = torch::sigmoid(fc(x));
  auto other = z.clone();
  other.mul_(2);
  z.sum().backward();
}

void noNode(torch::nn::Linear fc, torch::Tensor x) {
  auto soft = torch::softmax(torch::randn({8, 5}), 1);
  soft.clamp_(1e-6, 1.0);
  torch::Tensor probs;
  {
    torch::NoGradGuard noGrad;
    probs = torch::sigmoid(fc(x));
  }
  probs.mul_(2);
  (fc(x) * soft + probs).sum().backward();
}

void silenced(torch::nn::Linear fc, torch::Tensor x) {
  auto y = torch::tanh(fc(x));
  y.mul_(2); // NOLINT(inplace-write-before-backward)
  y.sum().backward();
}
