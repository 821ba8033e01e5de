// --fix-mode=fuse: consecutive forwards on one DDP object become one
// forward_group call, which broadcasts once.
#include <nets.h>

void declarations(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg);
  auto o1 = d(a);
  torch::Tensor o2 = d(b);
  (o1 + o2).sum().backward();
}

void assignments(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg);
  torch::Tensor o1, o2;
  o1 = d(a);
  o2 = d.forward(b);
  (o1 + o2).sum().backward();
}

void threeViewsThroughPointer(Net net, PG pg, torch::Tensor a, torch::Tensor b,
                              torch::Tensor c) {
  auto p = std::make_shared<DDP>(net, pg);
  auto v1 = p->forward(a);
  auto v2 = p->forward(b);
  auto v3 = p->forward(c);
  (v1 + v2 + v3).sum().backward();
}

void severalArguments(Net net, PG pg, torch::Tensor a, torch::Tensor b,
                      torch::Tensor mask) {
  DDP d(net, pg);
  auto o1 = d(a, mask);
  auto o2 = d(b, mask);
  (o1 + o2).sum().backward();
}
