#include <nets.h>

void oldStep(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg);
  auto o1 = d(a);
  auto o2 = d(b);
  (o1 + o2).sum().backward();
}

void newStep(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP e(net, pg);
  auto p1 = e(a);
  auto p2 = e(b);
  (p1 * p2).sum().backward();
}
