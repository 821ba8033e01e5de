// A file that includes only parts of LibTorch that do not include
// <torch/version.h> (here: the mock told to leave it out) is judged by the
// <torch/version.h> on its include path.
// RUN: %check_ddpguard %s %t -- %mock_flags -DMOCK_TORCH_OMITS_VERSION -isystem %inputs/versions/2.15.0
// RUN: %check_ddpguard --check-suffix=OLD %s %t.old -- %mock_flags -DMOCK_TORCH_OMITS_VERSION -isystem %inputs/versions/2.12.0
#include <nets.h>

#ifdef TORCH_VERSION_MAJOR
#error the mock should not have included <torch/version.h>
#endif

void twoForwards(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg);
  // CHECK-FIXES-OLD: DDP d(net, pg, ddpguard::DDPOptions().broadcast_buffers(false));
  auto o1 = d(a);
  auto o2 = d(b);
  // CHECK-MESSAGES-OLD: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd'
  // CHECK-MESSAGES-OLD: :[[@LINE-2]]:13: note: judged by LibTorch 2.12.0, from <torch/version.h> on the include path{{$}}
  (o1 + o2).sum().backward();
}
