// The forms of a forward and of an optimizer the check follows: `M(x)`,
// `M->forward(x)`, `(*M)(x)` on holders; members holding a Sequential and
// their optimizers; a local vector of one module's parameters; the module
// of a DDP object, whose forwards save its parameters.
// RUN: %check_ddpguard --unfixed %s %t -- %mock_flags
#include <nets.h>

void derefCall(torch::nn::Sequential D, torch::Tensor x) {
  torch::optim::Adagrad opt(D->parameters());
  auto loss = (*D).forward(x).mean();
  loss.backward({}, true);
  opt.step();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step of 'opt' writes the parameters of 'D' in place, which the forward at line [[@LINE-3]] saved
  // CHECK-MESSAGES: :[[@LINE-4]]:15: note: forward on 'D' is here
  // CHECK-MESSAGES: :[[@LINE+3]]:8: note: the backward that fails is here
  // CHECK-MESSAGES: :[[@LINE-4]]:3: note: no fix is offered
  // CHECK-MESSAGES: :[[@LINE-5]]:3: note: judged by
  loss.backward();
}

void parameterVector(torch::nn::Sequential D, torch::Tensor x) {
  std::vector<torch::Tensor> params = D->parameters();
  torch::optim::LBFGS opt(params);
  auto loss = D->forward(x).mean();
  loss.backward({}, true);
  opt.step();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step of 'opt' writes the parameters of 'D' in place, which the forward at line [[@LINE-3]] saved
  // CHECK-MESSAGES: :[[@LINE-4]]:15: note: forward on 'D' is here
  // CHECK-MESSAGES: :[[@LINE+3]]:8: note: the backward that fails is here
  // CHECK-MESSAGES: :[[@LINE-4]]:3: note: no fix is offered
  // CHECK-MESSAGES: :[[@LINE-5]]:3: note: judged by
  loss.backward();
}

struct Trainer {
  Trainer() : optD(disc->parameters()) {}
  void step(torch::Tensor x) {
    auto loss = disc(x).mean();
    loss.backward({}, true);
    optD.step();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step of 'optD' writes the parameters of 'disc' in place, which the forward at line [[@LINE-3]] saved
    // CHECK-MESSAGES: :[[@LINE-4]]:17: note: forward on 'disc' is here
    // CHECK-MESSAGES: :[[@LINE+3]]:10: note: the backward that fails is here
    // CHECK-MESSAGES: :[[@LINE-4]]:5: note: no fix is offered
    // CHECK-MESSAGES: :[[@LINE-5]]:5: note: judged by
    loss.backward();
  }
  torch::nn::Sequential disc;
  torch::optim::Adam optD;
};

// A DDP object over a module without buffers: no DDP finding, but its
// forward saved the parameters its module's optimizer steps.
void ddpModule(Plain net, PG pg, torch::Tensor x) {
  ddpguard::DistributedDataParallel<Plain> d(net, pg);
  torch::optim::Adam opt(d.module()->parameters());
  auto loss = d(x).mean();
  loss.backward({}, true);
  opt.step();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step of 'opt' writes the parameters of 'd' in place, which the forward at line [[@LINE-3]] saved
  // CHECK-MESSAGES: :[[@LINE-4]]:15: note: forward on 'd' is here
  // CHECK-MESSAGES: :[[@LINE+3]]:8: note: the backward that fails is here
  // CHECK-MESSAGES: :[[@LINE-4]]:3: note: no fix is offered
  // CHECK-MESSAGES: :[[@LINE-5]]:3: note: judged by
  loss.backward();
}
