#include <nets.h>

void twoViews(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  int unused = 0;
  DDP d(net, pg);
  auto o1 = d(a);
  auto o2 = d(b);
  (o1 + o2).sum().backward();
}

int noReturn(int x) {
  if (x > 0)
    return 1;
}
