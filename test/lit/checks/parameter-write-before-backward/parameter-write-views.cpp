// Writes through what shares a parameter's version counter: `detach()` and
// other views (measured: docs/ground-truth.md, "Optimizer steps and version
// counters"), a local reference, torch::nn::init's in-place initialisers,
// and a foreach operation over the whole list. clip_grad_norm_ writes the
// gradients, not the parameters.
// RUN: %check_ddpguard --unfixed %s %t -- %mock_flags
#include <torch/torch.h>

void throughViews(torch::nn::Linear lin, torch::Tensor x) {
  auto out = lin(x);
  torch::nn::utils::clip_grad_norm_(lin->parameters(), 1.0);
  lin->weight.detach().mul_(0.5);
  // CHECK-MESSAGES: :[[@LINE-1]]:24: warning: 'mul_' writes a parameter of 'lin' in place, which the forward at line [[@LINE-3]] saved for backward; the backward at line [[@LINE+21]] through that forward will fail [parameter-write-before-backward]
  // CHECK-MESSAGES: :[[@LINE-2]]:3: note: 'lin->weight.detach()' is one of the parameters of 'lin'
  // CHECK-MESSAGES: :[[@LINE-5]]:14: note: forward on 'lin' is here
  // CHECK-MESSAGES: :[[@LINE+18]]:13: note: the backward that fails is here
  // CHECK-MESSAGES: :[[@LINE-5]]:24: note: no fix is offered
  // CHECK-MESSAGES: :[[@LINE-6]]:24: note: judged by
  auto &w = lin->weight;
  w[0].zero_();
  // CHECK-MESSAGES: :[[@LINE-1]]:8: warning: 'zero_' writes a parameter of 'lin' in place, which the forward at line [[@LINE-11]] saved for backward; the backward at line [[@LINE+13]] through that forward will fail [parameter-write-before-backward]
  // CHECK-MESSAGES: :[[@LINE-2]]:3: note: 'w[0]' is one of the parameters of 'lin'
  // CHECK-MESSAGES: :[[@LINE-13]]:14: note: forward on 'lin' is here
  // CHECK-MESSAGES: :[[@LINE+10]]:13: note: the backward that fails is here
  // CHECK-MESSAGES: :[[@LINE-5]]:8: note: no fix is offered
  // CHECK-MESSAGES: :[[@LINE-6]]:8: note: judged by
  torch::nn::init::zeros_(lin->bias);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: 'torch::nn::init::zeros_' writes a parameter of 'lin' in place, which the forward at line [[@LINE-18]] saved for backward; the backward at line [[@LINE+6]] through that forward will fail [parameter-write-before-backward]
  // CHECK-MESSAGES: :[[@LINE-2]]:27: note: 'lin->bias' is one of the parameters of 'lin'
  torch::_foreach_mul_(lin->parameters(), 0.5);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: 'torch::_foreach_mul_' writes the parameters of 'lin' in place, which the forward at line [[@LINE-21]] saved for backward; the backward at line [[@LINE+3]] through that forward will fail [parameter-write-before-backward]
  // CHECK-MESSAGES: :[[@LINE-2]]:24: note: 'lin->parameters()' is the list of the parameters of 'lin'; an in-place write bumps their version counters in any grad mode, NoGradGuard included
  x.mul_(2.0);
  out.sum().backward();
}
