#include <nets.h>
#include <memory>

// ddpguard's DDP behind a TORCH_MODULE-style holder.
class DDPHolder : public torch::nn::ModuleHolder<DDP> {
public:
  using torch::nn::ModuleHolder<DDP>::ModuleHolder;
};

std::shared_ptr<DDP> build_model(Net net, PG pg) {
  return std::make_shared<DDP>(net, pg);
}

void arrow(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDPHolder h(net, pg);
  auto o1 = h->forward(a);
  auto o2 = h(b);
  (o1 + o2).sum().backward();
}

void deref(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDPHolder h = DDPHolder(net, pg);
  auto o1 = (*h).forward(a);
  auto o2 = h.ptr()->forward(b);
  (o1 + o2).sum().backward();
}

void run(DDP &d, torch::Tensor a, torch::Tensor b) {
  auto o1 = d(a);
  auto o2 = d(b);
  (o1 + o2).sum().backward();
}

void factory(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  auto model = build_model(net, pg);
  run(*model, a, b);
  DDPHolder h = nullptr;
  h = DDPHolder(net, pg);
  run(*h, a, b);
}

struct Trainer : torch::nn::Module {
  DDPHolder h{nullptr};
  Trainer(Net net, PG pg) { h = register_module("h", DDPHolder(net, pg)); }
  void step(torch::Tensor a, torch::Tensor b) {
    auto o1 = h(a);
    auto o2 = h->forward(b);
    (o1 + o2).sum().backward();
  }
};
