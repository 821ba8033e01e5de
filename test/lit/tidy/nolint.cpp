// NOLINT and NOLINTNEXTLINE silence the check, in the plugin and the CLI.
// RUN: %check_ddpguard %s %t -- %mock_flags
#include <nets.h>

void silenced(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg);
  auto o1 = d(a);
  auto o2 = d(b); // NOLINT(ddp-multiple-forward-before-backward)
  (o1 + o2).sum().backward();
}

void silencedNextLine(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg);
  auto o1 = d(a);
  // NOLINTNEXTLINE(ddp-multiple-forward-before-backward)
  auto o2 = d(b);
  (o1 + o2).sum().backward();
}
