#include "shared.h"

// Includes the header without calling its helper: in this translation unit
// the helper's finding has all its notes in the header.
void train(Net net, PG pg, torch::Tensor a) {
  DDP d(net, pg);
  d(a).sum().backward();
}
