// An optimizer whose type is not among the measured ones (a user's, derived
// from torch::optim::Optimizer) is assumed to bump the parameters' version
// counters, as every LibTorch optimizer but SGD does; a note says so.
// RUN: %check_ddpguard --unfixed %s %t -- %mock_flags
#include <memory>
#include <torch/torch.h>

class Lion : public torch::optim::Optimizer {
public:
  Lion(std::vector<torch::Tensor> Parameters, double LearningRate);
  torch::Tensor step() override;
};

void userOptimizer(torch::nn::Sequential D, torch::Tensor x) {
  Lion opt(D->parameters(), 1e-4);
  auto loss = D(x).mean();
  loss.backward({}, /*retain_graph=*/true);
  opt.step();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step of 'opt' writes the parameters of 'D' in place
  // CHECK-MESSAGES: :[[@LINE-4]]:15: note: forward on 'D' is here
  // CHECK-MESSAGES: :[[@LINE+4]]:8: note: the backward that fails is here
  // CHECK-MESSAGES: :[[@LINE-4]]:3: note: assuming that a step of 'Lion' bumps the version counters of the parameters it updates: the type is not among the measured optimizers (Adam, AdamW, RMSprop, Adagrad and LBFGS do; SGD does not)
  // CHECK-MESSAGES: :[[@LINE-5]]:3: note: no fix is offered
  // CHECK-MESSAGES: :[[@LINE-6]]:3: note: judged by
  loss.backward();
}

// Through the base class: the construction names the type, SGD, whose step
// is silent (silent-write-before-backward).
void throughBase(torch::nn::Sequential D, torch::Tensor x) {
  std::unique_ptr<torch::optim::Optimizer> opt =
      std::make_unique<torch::optim::SGD>(D->parameters(), 0.1);
  auto loss = D(x).mean();
  loss.backward({}, /*retain_graph=*/true);
  opt->step();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step of 'opt' (torch::optim::SGD) writes the parameters of 'D' in place{{.*}}[silent-write-before-backward]
  loss.backward();
}
