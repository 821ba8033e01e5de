// --fix-mode=fuse where the forwards cannot be fused: the diagnostic says
// why, and the broadcast fix is offered in a note (not applied by --fix).
#include <nets.h>

void loop(Net net, PG pg, std::vector<torch::Tensor> xs) {
  DDP d(net, pg);
  torch::Tensor loss;
  for (const auto &x : xs)
    loss = loss + d(x).sum();
  loss.backward();
}

void outputFeedsNextInput(Net net, PG pg, torch::Tensor a) {
  DDP d(net, pg);
  auto o1 = d(a);
  auto o2 = d(o1);
  o2.sum().backward();
}
