// A project header with a helper that has the bug.
#pragma once
#include <nets.h>

inline void step(DDP &d, torch::Tensor a, torch::Tensor b) {
  auto o1 = d(a);
  auto o2 = d(b);
  (o1 + o2).sum().backward();
}
