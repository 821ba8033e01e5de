#include "macros.h"

void train(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  WRAP(Net) w(net, pg);
  auto o1 = w(a);
  auto o2 = w(b);
  (o1 + o2).sum().backward();
}
