// The out-of-place fix only where it keeps what the program computes: not
// for a parameter (the caller's tensor would keep its values), not where a
// handle to the storage was taken before the write, not where the write's
// value is used. A compound assignment keeps its operand's grouping.
// RUN: %check_ddpguard --unfixed %s %t -- %mock_flags
#include <torch/torch.h>

void parameter(torch::nn::Linear fc, torch::Tensor x) {
  auto y = x * fc(x);
  x.mul_(2);
  // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: 'mul_' writes 'x' in place, which 'x * fc(x)' at line [[@LINE-2]] saved for backward; the backward at line [[@LINE+5]] through it will fail [inplace-write-before-backward]
  // CHECK-MESSAGES: :[[@LINE-3]]:12: note: 'x * fc(x)' saved the tensor for backward here
  // CHECK-MESSAGES: :[[@LINE+3]]:11: note: the backward that fails is here
  // CHECK-MESSAGES: :[[@LINE-4]]:5: note: no fix is offered: 'x' is not a tensor variable of this function: written out of place, the tensor it names (a view, a parameter, a member) would keep its old values
  // CHECK-MESSAGES: :[[@LINE-5]]:5: note: judged by LibTorch 2.11.0, assumed
  y.sum().backward();
}

void handleTaken(torch::nn::Linear fc, torch::Tensor x) {
  auto y = torch::sigmoid(fc(x));
  std::vector<torch::Tensor> kept;
  kept.push_back(y);
  y.mul_(2);
  // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: 'mul_' writes 'y' in place, which 'torch::sigmoid(fc(x))' at line [[@LINE-4]] saved for backward; the backward at line [[@LINE+5]] through it will fail [inplace-write-before-backward]
  // CHECK-MESSAGES: :[[@LINE-5]]:12: note: 'torch::sigmoid(fc(x))' saved the tensor for backward here
  // CHECK-MESSAGES: :[[@LINE+3]]:11: note: the backward that fails is here
  // CHECK-MESSAGES: :[[@LINE-4]]:5: note: no fix is offered: 'y' may share its storage with another tensor at line [[@LINE-5]]: written out of place, that tensor would keep its old values
  // CHECK-MESSAGES: :[[@LINE-5]]:5: note: judged by LibTorch 2.11.0, assumed
  y.sum().backward();
}

void valueUsed(torch::nn::Linear fc, torch::Tensor x) {
  auto y = torch::sigmoid(fc(x));
  auto z = y.mul_(2);
  // CHECK-MESSAGES: :[[@LINE-1]]:14: warning: 'mul_' writes 'y' in place, which 'torch::sigmoid(fc(x))' at line [[@LINE-2]] saved for backward; the backward at line [[@LINE+5]] through it will fail [inplace-write-before-backward]
  // CHECK-MESSAGES: :[[@LINE-3]]:12: note: 'torch::sigmoid(fc(x))' saved the tensor for backward here
  // CHECK-MESSAGES: :[[@LINE+3]]:11: note: the backward that fails is here
  // CHECK-MESSAGES: :[[@LINE-4]]:14: note: no fix is offered: the value of 'mul_' is used: written out of place, that use would change
  // CHECK-MESSAGES: :[[@LINE-5]]:14: note: judged by LibTorch 2.11.0, assumed
  z.sum().backward();
}

void grouped(torch::nn::Linear fc, torch::Tensor x) {
  auto h = fc(x);
  auto g = h * torch::sigmoid(fc(x));
  h += fc(x) * 2.0;
  // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: 'operator+=' writes 'h' in place, which 'h * torch::sigmoid(fc(x))' at line [[@LINE-2]] saved for backward; the backward at line [[@LINE+5]] through it will fail [inplace-write-before-backward]
  // CHECK-MESSAGES: :[[@LINE-3]]:12: note: 'h * torch::sigmoid(fc(x))' saved the tensor for backward here
  // CHECK-MESSAGES: :[[@LINE+3]]:11: note: the backward that fails is here
  // CHECK-MESSAGES: :[[@LINE-4]]:5: note: judged by LibTorch 2.11.0, assumed
  // CHECK-FIXES: {{^}}  h = h + (fc(x) * 2.0);{{$}}
  g.sum().backward();
}
