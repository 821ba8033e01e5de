// A step in a loop over one retained graph: the second iteration's backward
// traverses the graph whose saved parameters the first iteration's step
// wrote.
// RUN: %check_ddpguard --unfixed %s %t -- %mock_flags
#include <torch/torch.h>

void stepsOverOneGraph(torch::nn::Sequential D, torch::Tensor x) {
  torch::optim::RMSprop opt(D->parameters());
  auto loss = D(x).mean();
  for (int i = 0; i < 3; ++i) {
    opt.zero_grad();
    loss.backward({}, /*retain_graph=*/true);
    opt.step();
    // CHECK-MESSAGES: :[[@LINE-1]]:5: warning: step of 'opt' writes the parameters of 'D' in place, which the forward at line [[@LINE-5]] saved for backward; the backward at line [[@LINE-2]] through that forward will fail [optimizer-step-before-backward]
    // CHECK-MESSAGES: :[[@LINE-6]]:15: note: forward on 'D' is here
    // CHECK-MESSAGES: :[[@LINE-4]]:10: note: the backward that fails is here, in the next iteration of the loop at line [[@LINE-6]]
    // CHECK-MESSAGES: :[[@LINE-4]]:5: note: no fix is offered
    // CHECK-MESSAGES: :[[@LINE-5]]:5: note: judged by
  }
}
