// A multiplication saves each operand for the other's gradient: `h += ...`
// after `h * g` fails the backward through the product
// (test/corpus/programs/residual_add_inplace_saved_by_mul.cpp); an indexed
// assignment into relu's output writes the output it saved
// (relu_hidden_index_assign.cpp), as index_put_ into softmax's does.
// The `+=` is written `h = h + ...`; the indexed writes have no
// out-of-place spelling, and the note says so.
// RUN: %check_ddpguard --unfixed %s %t -- %mock_flags
#include <torch/torch.h>

struct BlockImpl : torch::nn::Module {
  torch::Tensor forward(torch::Tensor x) {
    auto h = fc1(x);
    auto gated = h * torch::sigmoid(gate(x));
    h += fc2(gated);
    // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: 'operator+=' writes 'h' in place, which 'h * torch::sigmoid(gate(x))' at line [[@LINE-2]] saved for backward; a backward through the result of this forward will fail [inplace-write-before-backward]
    // CHECK-MESSAGES: :[[@LINE-3]]:18: note: 'h * torch::sigmoid(gate(x))' saved the tensor for backward here
    // CHECK-MESSAGES: :[[@LINE+3]]:12: note: the forward returns a value computed through it: the backward of whoever trains this module fails
    // CHECK-MESSAGES: :[[@LINE-4]]:7: note: judged by LibTorch 2.11.0, assumed
    // CHECK-FIXES: {{^}}    h = h + fc2(gated);{{$}}
    return torch::relu(h);
  }
  torch::nn::Linear fc1{8, 8}, gate{8, 8}, fc2{8, 8};
};

struct PaddedImpl : torch::nn::Module {
  torch::Tensor forward(torch::Tensor x) {
    auto h = torch::relu(fc(x));
    h[0] = 0;
    // CHECK-MESSAGES: :[[@LINE-1]]:10: warning: 'operator=' writes 'h[0]' in place, which 'torch::relu(fc(x))' at line [[@LINE-2]] saved for backward; a backward through the result of this forward will fail [inplace-write-before-backward]
    // CHECK-MESSAGES: :[[@LINE-3]]:14: note: 'torch::relu(fc(x))' saved the tensor for backward here
    // CHECK-MESSAGES: :[[@LINE+10]]:12: note: the forward returns a value computed through it: the backward of whoever trains this module fails
    // CHECK-MESSAGES: :[[@LINE-4]]:10: note: no fix is offered: 'operator=' writes part of 'h[0]': no out-of-place spelling of it is offered; build the new values in a new tensor (torch::where, index_put)
    // CHECK-MESSAGES: :[[@LINE-5]]:10: note: judged by LibTorch 2.11.0, assumed
    auto attn = torch::softmax(fc(x), -1);
    attn.index_put_({0}, 0.0);
    // CHECK-MESSAGES: :[[@LINE-1]]:10: warning: 'index_put_' writes 'attn' in place, which 'torch::softmax(fc(x), -1)' at line [[@LINE-2]] saved for backward; a backward through the result of this forward will fail [inplace-write-before-backward]
    // CHECK-MESSAGES: :[[@LINE-3]]:17: note: 'torch::softmax(fc(x), -1)' saved the tensor for backward here
    // CHECK-MESSAGES: :[[@LINE+3]]:12: note: the forward returns a value computed through it: the backward of whoever trains this module fails
    // CHECK-MESSAGES: :[[@LINE-4]]:10: note: no fix is offered: at::Tensor has no 'index_put' that takes the arguments of 'index_put_'
    // CHECK-MESSAGES: :[[@LINE-5]]:10: note: judged by LibTorch 2.11.0, assumed
    return fc(h) + attn;
  }
  torch::nn::Linear fc{8, 8};
};

// Controls: the residual added out of place, a product by a number (which
// saves no tensor), and the assignment that rebinds a variable.
struct ControlsImpl : torch::nn::Module {
  torch::Tensor forward(torch::Tensor x) {
    auto h = fc(x);
    auto gated = h * torch::sigmoid(fc(x));
    h = h + fc(gated);
    auto scaled = fc(x);
    auto twice = scaled * 2.0;
    scaled += twice;
    auto r = torch::relu(fc(x));
    r = fc(x);
    r.mul_(2);
    return h + twice + scaled + r;
  }
  torch::nn::Linear fc{8, 8};
};
