#include "wrapper.h"

void train(AppNet net, torch::Tensor a, torch::Tensor b) {
  app::APP_WRAPPER(Pasted) w{net};
  auto o1 = w(a);
  auto o2 = w(b);
  (o1 + o2).sum().backward();
}
