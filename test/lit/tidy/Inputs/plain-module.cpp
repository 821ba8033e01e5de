#include <nets.h>

using PlainDDP = ddpguard::DistributedDataParallel<Plain>;

void plain(Plain net, PG pg, torch::Tensor a, torch::Tensor b) {
  PlainDDP d(net, pg);
  auto o1 = d(a);
  auto o2 = d(b);
  (o1 + o2).sum().backward();
}
