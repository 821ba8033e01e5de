// LibTorch's API is judged by its namespaces, not by how its headers were
// included: the same input gives the same findings and fixes with the
// headers as system headers (-isystem, --system-header-prefix) and as the
// user's own (-I). Results read only through LibTorch (`mean`, `item`,
// `detach`) never escape into code the checker cannot see.
// RUN: %check_ddpguard %s %t-isystem -- -std=c++17 -isystem %inputs/mock
// RUN: %check_ddpguard %s %t-I -- -std=c++17 -I%inputs/mock
// RUN: %check_ddpguard %s %t-prefix -- -std=c++17 -I%inputs/mock --system-header-prefix=torch/
#include <nets.h>
#include <cstdio>

torch::Tensor batch();

// The probe's history stays in LibTorch: it trains, so it is clean.
void probe(DDP &ddp) {
  auto probe = ddp(batch());
  auto o2 = ddp(batch());
  std::printf("%f\n", probe.mean().item<float>());
  auto kept = probe.detach();
  o2.sum().backward();
}

void twoForwards(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP ddp(net, pg);
  // CHECK-FIXES: {{^}}  DDP ddp(net, pg, ddpguard::DDPOptions().broadcast_buffers(false));{{$}}
  auto o1 = ddp(a);
  auto o2 = ddp(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'ddp' before the backward of the forward at line [[@LINE-2]]:
  (o1.mean() + o2.sum()).backward();
}
