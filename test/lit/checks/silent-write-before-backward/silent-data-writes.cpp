// In-place writes through `x.data()` leave x's version counter as it was:
// on parameters a forward saved, or on a value an operation saved, before
// a backward through it, nothing is raised and the gradients come from the
// written values. Labelled by running test/silent-cpp/silent_writes.cpp on
// LibTorch 2.11.0 and 2.15.0: data-add, data-clamp and saved-value-data
// silent, data-unsaved trains, saved-value raises
// (inplace-write-before-backward). parameter-write-before-backward and
// inplace-write-before-backward report none of the `.data()` writes.
// RUN: %check_ddpguard --unfixed %s %t -- %mock_flags
#include <torch/torch.h>

void dataAdd(torch::nn::Linear G, torch::nn::Sequential D, torch::Tensor real) {
  auto fake = G(torch::randn({5, 4}));
  auto dFake = D(fake);
  auto lossD = dFake.mean() - D(real).mean();
  lossD.backward({}, /*retain_graph=*/true);
  for (auto &p : D->parameters())
    p.data().add_(p.grad(), -0.1);
  // CHECK-MESSAGES: :[[@LINE-1]]:14: warning: 'add_' writes 'p' (the parameters of 'D') through .data() in place, which the forward at line [[@LINE-5]] saved for backward; a write through .data() does not bump the version counter, so the backward at line [[@LINE+5]] raises nothing and computes gradients from values the forward did not see [silent-write-before-backward]
  // CHECK-MESSAGES: :[[@LINE-6]]:16: note: forward on 'D' is here; it saved the parameters of 'D' for backward
  // CHECK-MESSAGES: :[[@LINE+3]]:16: note: this backward reads the written values without an error
  // CHECK-MESSAGES: :[[@LINE-4]]:14: note: no fix is offered: moving the write after the backward changes what the code between them reads, and a write that bumps the version counter would make that backward fail instead
  // CHECK-MESSAGES: :[[@LINE-5]]:14: note: on every supported LibTorch
  dFake.mean().backward();
}

void dataClamp(torch::nn::Linear G, torch::nn::Sequential D, torch::Tensor real) {
  auto fake = G(torch::randn({5, 4}));
  auto dFake = D(fake);
  auto lossD = dFake.mean() - D(real).mean();
  lossD.backward({}, /*retain_graph=*/true);
  for (auto &w : D->parameters())
    w.data().clamp_(-0.01, 0.01);
  // CHECK-MESSAGES: :[[@LINE-1]]:14: warning: 'clamp_' writes 'w' (the parameters of 'D') through .data() in place, which the forward at line [[@LINE-5]] saved for backward; a write through .data() does not bump the version counter, so the backward at line [[@LINE+5]] raises nothing {{.*}} [silent-write-before-backward]
  // CHECK-MESSAGES: :[[@LINE-6]]:16: note: forward on 'D' is here
  // CHECK-MESSAGES: :[[@LINE+3]]:25: note: this backward reads the written values without an error
  // CHECK-MESSAGES: :[[@LINE-4]]:14: note: no fix is offered
  // CHECK-MESSAGES: :[[@LINE-5]]:14: note: on every supported LibTorch
  (dFake.mean() * -1.0).backward();
}

// G's forward on an input without history saves none of G's parameters.
void dataUnsaved(torch::nn::Linear G, torch::nn::Sequential D) {
  auto fake = G(torch::randn({5, 4}));
  auto dFake = D(fake);
  G->weight.data().mul_(2);
  dFake.mean().backward();
}

void savedValueData(torch::Tensor w) {
  auto gate = torch::sigmoid(w * torch::randn({4}));
  gate.data().mul_(2);
  // CHECK-MESSAGES: :[[@LINE-1]]:15: warning: 'mul_' writes 'gate' through .data() in place, which 'torch::sigmoid(w * torch::randn({4}))' at line [[@LINE-2]] saved for backward; a write through .data() does not bump the version counter, so the backward at line [[@LINE+5]] raises nothing and computes gradients from values the forward did not see [silent-write-before-backward]
  // CHECK-MESSAGES: :[[@LINE-3]]:15: note: 'torch::sigmoid(w * torch::randn({4}))' saved the tensor for backward here
  // CHECK-MESSAGES: :[[@LINE+3]]:14: note: this backward reads the written values without an error
  // CHECK-MESSAGES: :[[@LINE-4]]:15: note: no fix is offered
  // CHECK-MESSAGES: :[[@LINE-5]]:15: note: on every supported LibTorch
  gate.sum().backward();
}

void savedValue(torch::Tensor w) {
  auto gate = torch::sigmoid(w * torch::randn({4}));
  gate.mul_(2);
  // CHECK-MESSAGES: :[[@LINE-1]]:8: warning: 'mul_' writes 'gate' in place, which 'torch::sigmoid(w * torch::randn({4}))' at line [[@LINE-2]] saved for backward; the backward at line [[@LINE+5]] through it will fail [inplace-write-before-backward]
  // CHECK-MESSAGES: :[[@LINE-3]]:15: note: 'torch::sigmoid
  // CHECK-MESSAGES: :[[@LINE+3]]:14: note: the backward that fails is here
  // CHECK-MESSAGES: :[[@LINE-4]]:8: note: judged by
  // CHECK-FIXES: {{^}}  gate = gate.mul(2);{{$}}
  gate.sum().backward();
}

// A gradient is saved by no forward.
void gradData(torch::nn::Sequential D, torch::Tensor x) {
  auto loss = D(x).mean();
  for (auto &p : D->parameters())
    p.grad().data().zero_();
  loss.backward();
}
