// A single Linear saves its weight only for the input's gradient
// (addmm/mm in tools/autograd/derivatives.yaml; measured: docs/
// ground-truth.md, "Which parameters a module's forward saves"): on data
// that requires no grad the step writes nothing the backward needs. On an
// input with history it does.
// RUN: %check_ddpguard --unfixed %s %t -- %mock_flags
#include <torch/torch.h>

void linearOnData(torch::nn::Linear lin) {
  torch::optim::Adam opt(lin->parameters());
  auto data = torch::randn({8, 4});
  auto loss = lin(data).mean();
  loss.backward({}, /*retain_graph=*/true);
  opt.step();
  loss.backward();
}

void linearOnFeatures(torch::nn::Linear lin, torch::nn::Sequential encoder) {
  torch::optim::Adam opt(lin->parameters());
  auto features = encoder(torch::randn({8, 4}));
  auto loss = lin(features).mean();
  loss.backward({}, /*retain_graph=*/true);
  opt.step();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step of 'opt' writes the parameters of 'lin' in place, which the forward at line [[@LINE-3]] saved for backward; the backward at line [[@LINE+5]] through that forward will fail [optimizer-step-before-backward]
  // CHECK-MESSAGES: :[[@LINE-4]]:15: note: forward on 'lin' is here; it saved the parameters of 'lin' for backward because its input may require grad
  // CHECK-MESSAGES: :[[@LINE+3]]:8: note: the backward that fails is here
  // CHECK-MESSAGES: :[[@LINE-4]]:3: note: no fix is offered
  // CHECK-MESSAGES: :[[@LINE-5]]:3: note: judged by
  loss.backward();
}
