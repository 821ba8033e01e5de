#include <nets.h>

void halfTyped(Net net, PG pg, torch::Tensor a) {
  DDP d(net, pg)
  d(a).sum().backward();
}
