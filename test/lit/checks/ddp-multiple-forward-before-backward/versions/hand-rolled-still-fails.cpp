// A hand-rolled wrapper's broadcast is a plain copy_ unless its rule says
// otherwise: on LibTorch 2.12.1 and later it still fails, and the report says
// why PyTorch's fix does not reach it.
// RUN: %check_ddpguard --rules=%rules/examples/hand-rolled.yaml %s %t.a -- %mock_flags -isystem %inputs/versions/2.12.1
// RUN: %check_ddpguard --rules=%rules/examples/hand-rolled.yaml %s %t.b -- %mock_flags -isystem %inputs/versions/2.15.0
#include <nets.h>

namespace trainer {
struct HandRolledDDP {
  Net module;
  PG group;
  bool broadcast_buffers = true;
  torch::Tensor forward(const torch::Tensor &x);
};
} // namespace trainer

void step(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  trainer::HandRolledDDP d{net, pg};
  // CHECK-FIXES: trainer::HandRolledDDP d{net, pg};
  // CHECK-FIXES-NEXT: d.broadcast_buffers = false;
  auto o1 = d.forward(a);
  auto o2 = d.forward(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd' before the backward of the forward at line [[@LINE-2]]
  // CHECK-MESSAGES: :[[@LINE-2]]:13: note: judged by LibTorch {{2\.12\.1|2\.15\.0}}, from <torch/version.h>; 'trainer::HandRolledDDP' does not put the buffers' version counters back after its broadcast, as PyTorch's DDP does from 2.12.1 on (its rule in '{{.*}}hand-rolled.yaml' has no 'preserves-version-counters'){{$}}
  (o1 + o2).sum().backward();
}
