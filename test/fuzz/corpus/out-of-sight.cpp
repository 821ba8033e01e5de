// A DDP object whose construction is not visible: broadcast is assumed on
// (the default), no broadcast fix can be made, and the fuse fix is offered.
#include <nets.h>

void byReference(DDP &D, torch::Tensor a, torch::Tensor b) {
  auto o1 = D(a);
  auto o2 = D(b);
  (o1 + o2).sum().backward();
}
