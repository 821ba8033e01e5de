// The TorchVersion option overrides the headers' version, for code built
// against several: 2.11.0 over 2.15's headers reports, 2.12.1 over 2.11's is
// silent.
// RUN: %check_ddpguard --option=TorchVersion=2.11.0 %s %t.a -- %mock_flags -isystem %inputs/versions/2.15.0
// RUN: %check_ddpguard --option=TorchVersion=2.12.1 --check-suffix=SILENT %s %t.b -- %mock_flags -isystem %inputs/versions/2.11.2
// A value that is no version is a configuration error, of the plugin and
// (exit 2) of the CLI.
// RUN: rm -rf %t.bad && mkdir -p %t.bad && cp %s %t.bad/bad.cpp
// RUN: printf 'CheckOptions:\n  ddp-multiple-forward-before-backward.TorchVersion: two\n' > %t.bad/.clang-tidy
// RUN: %clang_tidy --load=%tidy_plugin -checks='-*,ddp-multiple-forward-before-backward' %t.bad/bad.cpp -- %mock_flags 2>&1 | %FileCheck --check-prefix=BAD %s
// RUN: %expect_exit 2 %ddpguard %t.bad/bad.cpp -- %mock_flags 2>&1 | %FileCheck --check-prefix=BAD %s
// BAD: invalid configuration value 'two' for option 'ddp-multiple-forward-before-backward.TorchVersion'; expected a LibTorch version such as 2.12.1
#include <nets.h>

void twoForwards(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg);
  // CHECK-FIXES: DDP d(net, pg, ddpguard::DDPOptions().broadcast_buffers(false));
  auto o1 = d(a);
  auto o2 = d(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd'
  // CHECK-MESSAGES: :[[@LINE-2]]:13: note: judged by LibTorch 2.11.0, from the TorchVersion option{{$}}
  // CHECK-MESSAGES: :[[@LINE-3]]:13: note: or build against LibTorch 2.12.1 or later
  (o1 + o2).sum().backward();
}
