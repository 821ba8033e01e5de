// Without its rule file the hand-rolled wrapper is not a DDP to ddpguard.
// RUN: %check_ddpguard %s %t -- %mock_flags
#include <nets.h>

namespace trainer {
struct HandRolledDDP {
  Net module;
  PG group;
  bool broadcast_buffers = true;
  torch::Tensor operator()(const torch::Tensor &x);
};
} // namespace trainer

void unknownWrapper(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  trainer::HandRolledDDP d{net, pg};
  auto o1 = d(a);
  auto o2 = d(b);
  (o1 + o2).sum().backward();
}
