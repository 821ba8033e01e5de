// The broadcast fix changes behaviour (each rank keeps its own running
// statistics): the note that comes with it says so and names the fixes that
// keep buffers in sync; in fuse mode the alternative's note says it too.
#include <nets.h>

void twoViews(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg);
  auto o1 = d(a);
  auto o2 = d(b);
  (o1 + o2).sum().backward();
}
