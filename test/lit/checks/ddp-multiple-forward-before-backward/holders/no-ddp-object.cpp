// Forwards through expressions that name no DDP object (an iterator into a
// container of holders) are forwards on temporaries: no finding, no crash.
// RUN: %check_ddpguard --rules=%S/Inputs/impl-rule.yaml %s %t-impl -- %mock_flags -I%S/Inputs
// RUN: %check_ddpguard --rules=%S/Inputs/holder-rule.yaml %s %t-holder -- %mock_flags -I%S/Inputs
#include "wrapped.h"
using trainer::WrappedDDP;
using trainer::WrappedDDPImpl;

#include <vector>
void step(std::vector<WrappedDDP> ws, torch::Tensor a, torch::Tensor b) {
  auto it = ws.begin();
  auto o1 = (*it)(a);
  auto o2 = (*it)->forward(b);
  (o1 + o2).sum().backward();
}
