#include "train.h"

void trainStep(DDP &m, torch::Tensor a, torch::Tensor b) {
  auto o1 = m(a);
  auto o2 = m(b);
  (o1 + o2).sum().backward();
}

static void views(DDP &m, torch::Tensor a) {
  auto o1 = m(a);
  auto o2 = m(a * 2);
  (o1 + o2).sum().backward();
}

void trainLoop(DDP &m, torch::Tensor a) { views(m, a); }

void quietStep(DDP &m, torch::Tensor a, torch::Tensor b) {
  auto o1 = m(a);
  auto o2 = m(b);
  (o1 + o2).sum().backward();
}
