#include "train.h"

void twoViews(DDP &model, torch::Tensor v1, torch::Tensor v2) {
  auto z1 = model(v1);
  auto z2 = model.forward(v2);
  torch::matmul(z1, z2.t()).sum().backward();
}
