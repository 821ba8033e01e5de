// Every form of the broadcast fix: add the option, flip true, extend a
// chain, an options variable (initialised or set later), make_shared, a
// member initialiser (shapes.cpp), and one fix for several warnings.
#include <nets.h>

void flipTrue(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg, ddpguard::DDPOptions().broadcast_buffers(true));
  auto o1 = d(a);
  auto o2 = d(b);
  (o1 + o2).sum().backward();
}

void extendChain(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg, ddpguard::DDPOptions().find_unused_parameters(true));
  auto o1 = d(a);
  auto o2 = d(b);
  (o1 + o2).sum().backward();
}

void optionsVariable(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  auto options = ddpguard::DDPOptions().bucket_cap_mb(10);
  DDP d(net, pg, options);
  auto o1 = d(a);
  auto o2 = d(b);
  (o1 + o2).sum().backward();
}

void optionsSetLater(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  ddpguard::DDPOptions options;
  options.broadcast_buffers(true);
  DDP d(net, pg, options);
  auto o1 = d(a);
  auto o2 = d(b);
  (o1 + o2).sum().backward();
}

void optionsSetToFalseLater(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  ddpguard::DDPOptions options;
  options.broadcast_buffers(false);
  DDP d(net, pg, options);
  auto o1 = d(a);
  auto o2 = d(b);
  (o1 + o2).sum().backward();
}

void makeShared(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  auto d = std::make_shared<DDP>(net, pg);
  auto o1 = d->forward(a);
  auto o2 = d->forward(b);
  (o1 + o2).sum().backward();
}

// Three forwards: two warnings, one fix at the construction.
void threeViews(Net net, PG pg, torch::Tensor a, torch::Tensor b,
                torch::Tensor c) {
  DDP d(net, pg);
  auto o1 = d(a);
  auto o2 = d(b);
  auto o3 = d(c);
  (o1 + o2 + o3).sum().backward();
}
