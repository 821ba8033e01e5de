#include <nets.h>

void oneView(Net net, PG pg, torch::Tensor a) {
  DDP d(net, pg);
  d(a).sum().backward();
}
