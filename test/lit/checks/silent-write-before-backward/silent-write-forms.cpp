// Where the silent write and the backward stand: a retained graph
// backpropagated in every iteration (the step is before the next
// iteration's backward), a write under NoGradGuard, and a write in a
// module's forward on a value it returns. Labelled by running
// test/silent-cpp/silent_writes.cpp on LibTorch 2.11.0 and 2.15.0: sgd-loop
// and data-no-grad silent; the module's forward writes as saved-value-data
// does (silent), for whoever backpropagates through its result.
// RUN: %check_ddpguard --unfixed %s %t -- %mock_flags
#include <torch/torch.h>

void sgdLoop(torch::nn::Sequential D, torch::Tensor x, int steps) {
  torch::optim::SGD optD(D->parameters(), 0.1);
  auto out = D(x);
  for (int i = 0; i < steps; ++i) {
    out.mean().backward({}, /*retain_graph=*/true);
    optD.step();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step of 'optD' (torch::optim::SGD) writes the parameters of 'D' in place, which the forward at line [[@LINE-4]] saved for backward; it writes through p.data(), which does not bump the version counter, so the backward at line [[@LINE-2]] raises nothing and computes gradients from values the forward did not see [silent-write-before-backward]
    // CHECK-MESSAGES: :[[@LINE-5]]:14: note: forward on 'D' is here
    // CHECK-MESSAGES: :[[@LINE-4]]:16: note: this backward, in the next iteration of the loop at line [[@LINE-5]], reads the written values without an error
    // CHECK-MESSAGES: :[[@LINE-4]]:5: note: no fix is offered
    // CHECK-MESSAGES: :[[@LINE-5]]:5: note: on every supported LibTorch
  }
}

void dataNoGrad(torch::nn::Sequential D, torch::Tensor x) {
  auto out = D(x);
  {
    torch::NoGradGuard noGrad;
    for (auto &p : D->parameters())
      p.data().mul_(0.5);
    // CHECK-MESSAGES: :[[@LINE-1]]:16: warning: 'mul_' writes 'p' (the parameters of 'D') through .data() in place, which the forward at line [[@LINE-5]] saved for backward; a write through .data() does not bump the version counter, so the backward at line [[@LINE+6]] raises nothing {{.*}} [silent-write-before-backward]
    // CHECK-MESSAGES: :[[@LINE-6]]:14: note: forward on 'D' is here
    // CHECK-MESSAGES: :[[@LINE+4]]:13: note: this backward reads the written values without an error
    // CHECK-MESSAGES: :[[@LINE-4]]:16: note: no fix is offered
    // CHECK-MESSAGES: :[[@LINE-5]]:16: note: on every supported LibTorch
  }
  out.sum().backward();
}

struct GatedImpl : torch::nn::Module {
  torch::Tensor forward(torch::Tensor x) {
    auto gate = torch::sigmoid(fc(x));
    gate.data().mul_(2);
    // CHECK-MESSAGES: :[[@LINE-1]]:17: warning: 'mul_' writes 'gate' through .data() in place, which 'torch::sigmoid(fc(x))' at line [[@LINE-2]] saved for backward; a write through .data() does not bump the version counter, so a backward through the result of this forward raises nothing and computes gradients from values the forward did not see [silent-write-before-backward]
    // CHECK-MESSAGES: :[[@LINE-3]]:17: note: 'torch::sigmoid(fc(x))' saved the tensor for backward here
    // CHECK-MESSAGES: :[[@LINE+3]]:12: note: the forward returns a value computed through it: the backward of whoever trains this module reads the written values
    // CHECK-MESSAGES: :[[@LINE-4]]:17: note: no fix is offered
    // CHECK-MESSAGES: :[[@LINE-5]]:17: note: on every supported LibTorch
    return gate;
  }
  torch::nn::Linear fc{8, 8};
};
