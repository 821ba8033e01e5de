// An in-place op on an activation that saved its result (sigmoid, tanh,
// softmax, relu), in a module's forward: whoever trains the module
// backpropagates through the result and fails
// (test/corpus/programs/sigmoid_gate_mul_inplace.cpp). A linear layer's
// output is not saved by the layer, so relu_ on it is fine.
// The fix writes the op out of place: the variable holds the same values,
// and the tensor the activation saved keeps its own.
// RUN: %check_ddpguard %s %t -- %mock_flags
#include <torch/torch.h>

struct GatedImpl : torch::nn::Module {
  torch::Tensor forward(torch::Tensor x) {
    auto h = torch::relu(fc(x));
    auto gate = torch::sigmoid(gateFc(x));
    gate.mul_(2);
    // CHECK-MESSAGES: :[[@LINE-1]]:10: warning: 'mul_' writes 'gate' in place, which 'torch::sigmoid(gateFc(x))' at line [[@LINE-2]] saved for backward; a backward through the result of this forward will fail [inplace-write-before-backward]
    // CHECK-MESSAGES: :[[@LINE-3]]:17: note: 'torch::sigmoid(gateFc(x))' saved the tensor for backward here
    // CHECK-MESSAGES: :[[@LINE+4]]:12: note: the forward returns a value computed through it: the backward of whoever trains this module fails
    // CHECK-MESSAGES: :[[@LINE-4]]:10: note: judged by LibTorch 2.11.0, assumed
    // CHECK-FIXES: {{^}}    gate = gate.mul(2);{{$}}
    auto linear = fc(x);
    return h * gate + linear.relu_();
  }
  torch::nn::Linear fc{8, 8}, gateFc{8, 8};
};

// In a training step: the backward at the end fails.
void step(torch::nn::Linear fc, torch::Tensor x) {
  auto h = torch::tanh(fc(x));
  h.relu_();
  // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: 'relu_' writes 'h' in place, which 'torch::tanh(fc(x))' at line [[@LINE-2]] saved for backward; the backward at line [[@LINE+7]] through it will fail [inplace-write-before-backward]
  // CHECK-MESSAGES: :[[@LINE-3]]:12: note: 'torch::tanh(fc(x))' saved the tensor for backward here
  // CHECK-MESSAGES: :[[@LINE+5]]:11: note: the backward that fails is here
  // CHECK-MESSAGES: :[[@LINE-4]]:5: note: judged by LibTorch 2.11.0, assumed
  // CHECK-FIXES: {{^}}  h = h.relu();{{$}}
  auto probs = fc(x).softmax(1);
  probs.sum().backward();
  h.sum().backward();
  // After its last backward, the activation may be written.
  probs.mul_(2);
}

// The same activation written out of place, or a new tensor in the same
// variable, is fine.
void outOfPlace(torch::nn::Linear fc, torch::Tensor x) {
  auto gate = torch::sigmoid(fc(x));
  gate = gate * 2.0;
  gate.mul_(2);
  gate.sum().backward();
}
