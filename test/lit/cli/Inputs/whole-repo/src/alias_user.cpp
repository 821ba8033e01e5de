#include "model.h"

void train(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  Model m(net, pg);
  auto o1 = m(a);
  auto o2 = m(b);
  (o1 + o2).sum().backward();
}
