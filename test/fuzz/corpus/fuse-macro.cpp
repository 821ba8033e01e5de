// The fuse fix through macros: an argument the macro computes from its own
// parameters cannot be spelled outside the expansion, so the fix is withheld
// with a note saying why (plugin, CLI, exported fixes); a macro that passes
// its arguments through unchanged is fused with the arguments as written.
#include <nets.h>

#define SCALED_FWD(D, X) D((X) * 2.0)
#define FWD(D, X) D(X)

void computed(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg);
  auto o1 = SCALED_FWD(d, a);
  auto o2 = SCALED_FWD(d, b);
  (o1 + o2).sum().backward();
}

void passedThrough(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg);
  auto o1 = FWD(d, a);
  auto o2 = FWD(d, b * 2.0);
  (o1 + o2).sum().backward();
}
