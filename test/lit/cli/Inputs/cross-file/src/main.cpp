#include "train.h"

void run(Net net, PG pg, torch::Tensor a) {
  DDP model(net, pg);
  trainStep(model, a, a);
  DDP looped(net, pg, ddpguard::DDPOptions().find_unused_parameters(true));
  trainLoop(looped, a);
  DDP quiet(net, pg, ddpguard::DDPOptions().broadcast_buffers(false));
  quietStep(quiet, a, a);
}
