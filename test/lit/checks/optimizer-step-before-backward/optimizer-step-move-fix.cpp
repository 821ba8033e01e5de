// The discriminator's step moves after the generator's backward when that
// backward accumulates into none of the discriminator's parameters
// (backward's `inputs`, or autograd::grad) and nothing between them uses the
// discriminator or its optimizer: the step and the backward then compute
// what they would have, had the backward not failed.
// RUN: %check_ddpguard --unfixed %s %t -- %mock_flags
#include <torch/torch.h>
#include <torch/optim/optim.h>

void restricted(torch::nn::Sequential G, torch::nn::Sequential D,
                torch::Tensor real) {
  torch::optim::Adam optD(D->parameters(), 2e-4);
  torch::optim::Adam optG(G->parameters(), 2e-4);
  auto fakeOut = D(G(torch::randn({8, 4})));
  auto lossD = (fakeOut - D(real)).mean();
  lossD.backward({}, /*retain_graph=*/true);
  optD.step();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step of 'optD' writes the parameters of 'D' in place, which the forward at line [[@LINE-4]] saved for backward; the backward at line [[@LINE+6]] through that forward will fail [optimizer-step-before-backward]
  // CHECK-MESSAGES: :[[@LINE-5]]:18: note: forward on 'D' is here; it saved the parameters of 'D' for backward
  // CHECK-MESSAGES: :[[@LINE+4]]:9: note: the backward that fails is here
  // CHECK-MESSAGES: :[[@LINE-4]]:3: note: the fix moves the step after the backward at line [[@LINE+3]]: that backward accumulates into no parameter of 'D' and nothing between them uses 'D' or its optimizer, so the step and the backward compute what they did
  // CHECK-MESSAGES: :[[@LINE-5]]:3: note: judged by LibTorch 2.11.0, assumed
  auto lossG = fakeOut.mean() * -1.0;
  lossG.backward({}, {}, false, G->parameters());
  // CHECK-FIXES: {{^}}  lossG.backward({}, {}, false, G->parameters());{{$}}
  // CHECK-FIXES-NEXT: {{^}}  optD.step();{{$}}
  optG.step();
}

void gradients(torch::nn::Sequential G, torch::nn::Sequential D,
               torch::Tensor real) {
  torch::optim::Adam optD(D->parameters(), 2e-4);
  auto fakeOut = D(G(torch::randn({8, 4})));
  (fakeOut - D(real)).mean().backward({}, /*retain_graph=*/true);
  optD.step();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step of 'optD' writes the parameters of 'D' in place, which the forward at line [[@LINE-3]] saved for backward; the backward at line [[@LINE+5]] through that forward will fail [optimizer-step-before-backward]
  // CHECK-MESSAGES: :[[@LINE-4]]:18: note: forward on 'D' is here; it saved the parameters of 'D' for backward
  // CHECK-MESSAGES: :[[@LINE+3]]:16: note: the backward that fails is here
  // CHECK-MESSAGES: :[[@LINE-4]]:3: note: the fix moves the step after the backward at line [[@LINE+2]]: that backward accumulates into no parameter of 'D' and nothing between them uses 'D' or its optimizer, so the step and the backward compute what they did
  // CHECK-MESSAGES: :[[@LINE-5]]:3: note: judged by LibTorch 2.11.0, assumed
  auto grads = torch::autograd::grad({fakeOut.mean()}, G->parameters());
  // CHECK-FIXES: {{^}}  auto grads = torch::autograd::grad({fakeOut.mean()}, G->parameters());{{$}}
  // CHECK-FIXES-NEXT: {{^}}  optD.step();{{$}}
}

void usedBetween(torch::nn::Sequential G, torch::nn::Sequential D,
                 torch::Tensor real) {
  torch::optim::Adam optD(D->parameters(), 2e-4);
  auto fakeOut = D(G(torch::randn({8, 4})));
  (fakeOut - D(real)).mean().backward({}, /*retain_graph=*/true);
  optD.step();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step of 'optD' writes the parameters of 'D' in place, which the forward at line [[@LINE-3]] saved for backward; the backward at line [[@LINE+6]] through that forward will fail [optimizer-step-before-backward]
  // CHECK-MESSAGES: :[[@LINE-4]]:18: note: forward on 'D' is here; it saved the parameters of 'D' for backward
  // CHECK-MESSAGES: :[[@LINE+4]]:18: note: the backward that fails is here
  // CHECK-MESSAGES: :[[@LINE-4]]:3: note: no fix is offered: the statement at line [[@LINE+2]] uses 'D' or its optimizer between the step and the backward at line [[@LINE+3]]: moved, it would see the weights before the step
  // CHECK-MESSAGES: :[[@LINE-5]]:3: note: judged by LibTorch 2.11.0, assumed
  auto check = D(real);
  fakeOut.mean().backward({}, {}, false, G->parameters());
}

void accumulates(torch::nn::Sequential G, torch::nn::Sequential D,
                 torch::Tensor real) {
  torch::optim::Adam optD(D->parameters(), 2e-4);
  auto fakeOut = D(G(torch::randn({8, 4})));
  (fakeOut - D(real)).mean().backward({}, /*retain_graph=*/true);
  optD.step();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step of 'optD' writes the parameters of 'D' in place, which the forward at line [[@LINE-3]] saved for backward; the backward at line [[@LINE+5]] through that forward will fail [optimizer-step-before-backward]
  // CHECK-MESSAGES: :[[@LINE-4]]:18: note: forward on 'D' is here; it saved the parameters of 'D' for backward
  // CHECK-MESSAGES: :[[@LINE+3]]:18: note: the backward that fails is here
  // CHECK-MESSAGES: :[[@LINE-4]]:3: note: no fix is offered: moving the step after the backward at line [[@LINE+2]] would make it use that backward's gradients too, and recomputing the forward after the step would change what the later loss sees; both change what training computes
  // CHECK-MESSAGES: :[[@LINE-5]]:3: note: judged by LibTorch 2.11.0, assumed
  fakeOut.mean().backward({}, {}, false, D->parameters());
}
