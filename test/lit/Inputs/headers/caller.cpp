#include "shared.h"

void train(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg);
  step(d, a, b);
}
