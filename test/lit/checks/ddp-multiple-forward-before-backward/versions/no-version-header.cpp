// Without TORCH_VERSION_MAJOR/MINOR/PATCH and without <torch/version.h> on
// the include path, the checker judges by the oldest supported LibTorch,
// 2.11.0, where the failure exists, and says so.
// RUN: %check_ddpguard %s %t -- %mock_flags
#include <nets.h>

void twoForwards(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg);
  // CHECK-FIXES: DDP d(net, pg, ddpguard::DDPOptions().broadcast_buffers(false));
  auto o1 = d(a);
  auto o2 = d(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd'
  // CHECK-MESSAGES: :[[@LINE-2]]:13: note: judged by LibTorch 2.11.0, assumed: no TORCH_VERSION_MAJOR/MINOR/PATCH is defined and no <torch/version.h> is on the include path; set the TorchVersion option to judge by another{{$}}
  // CHECK-MESSAGES: :[[@LINE-3]]:13: note: or build against LibTorch 2.12.1 or later
  (o1 + o2).sum().backward();
}
