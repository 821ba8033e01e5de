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
  dFake.mean().backward();
}

void dataClamp(torch::nn::Linear G, torch::nn::Sequential D, torch::Tensor real) {
  auto fake = G(torch::randn({5, 4}));
  auto dFake = D(fake);
  auto lossD = dFake.mean() - D(real).mean();
  lossD.backward({}, /*retain_graph=*/true);
  for (auto &w : D->parameters())
    w.data().clamp_(-0.01, 0.01);
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
  gate.sum().backward();
}

void savedValue(torch::Tensor w) {
  auto gate = torch::sigmoid(w * torch::randn({4}));
  gate.mul_(2);
  gate.sum().backward();
}

// A gradient is saved by no forward.
void gradData(torch::nn::Sequential D, torch::Tensor x) {
  auto loss = D(x).mean();
  for (auto &p : D->parameters())
    p.grad().data().zero_();
  loss.backward();
}
