#include "train.h"

void train(Encoder encoder, Group group, torch::Tensor v1, torch::Tensor v2) {
  auto options = ddpguard::DDPOptions().find_unused_parameters(false);
  DDP model(encoder, group, options);
  twoViews(model, v1, v2);
}
