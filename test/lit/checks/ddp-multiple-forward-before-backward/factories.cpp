// A DDP built by a factory in the same file, returned by smart pointer or by
// value: the fixes go to the construction in the factory, once however many
// objects it makes, and a note names the factory.
// RUN: %check_ddpguard %s %t -- %mock_flags
// RUN: %check_ddpguard --fix-mode=once-per-backward --check-suffix=ONCE %s %t-once -- %mock_flags
#include <nets.h>

std::shared_ptr<DDP> build_model(PG pg) {
  return std::make_shared<DDP>(Net(), pg);
  // CHECK-FIXES: {{^}}  return std::make_shared<DDP>(Net(), pg, ddpguard::DDPOptions().broadcast_buffers(false));{{$}}
  // CHECK-FIXES-ONCE: {{^}}  return std::make_shared<DDP>(Net(), pg, ddpguard::DDPOptions().buffer_broadcast(ddpguard::BufferBroadcast::kOncePerBackward));{{$}}
}

DDP make_ddp(Net net, PG pg) { return DDP(net, pg); }
// CHECK-FIXES: {{^}}DDP make_ddp(Net net, PG pg) { return DDP(net, pg, ddpguard::DDPOptions().broadcast_buffers(false)); }{{$}}

void bySmartPointer(PG pg, torch::Tensor a, torch::Tensor b) {
  auto model = build_model(pg);
  auto o1 = (*model)(a);
  auto o2 = model->forward(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'model' before the backward of the forward at line [[@LINE-2]]:
  // CHECK-MESSAGES: :[[@LINE-13]]:10: note: 'broadcast_buffers' is true by default in this construction of 'model'
  // CHECK-MESSAGES: :[[@LINE-5]]:16: note: 'model' is constructed by 'build_model', called here
  // CHECK-MESSAGES-ONCE: :[[@LINE-4]]:13: warning: forward call on DDP-wrapped 'model'
  (o1 + o2).sum().backward();
}

void secondObject(PG pg, torch::Tensor a, torch::Tensor b) {
  auto other = build_model(pg);
  auto o1 = (*other)(a);
  auto o2 = (*other)(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'other' before the backward of the forward at line [[@LINE-2]]:
  // CHECK-MESSAGES: :[[@LINE-4]]:16: note: 'other' is constructed by 'build_model', called here
  // CHECK-MESSAGES-ONCE: :[[@LINE-3]]:13: warning: forward call on DDP-wrapped 'other'
  (o1 + o2).sum().backward();
}

void byValue(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d = make_ddp(net, pg);
  auto o1 = d(a);
  auto o2 = d(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd' before the backward of the forward at line [[@LINE-2]]:
  // CHECK-MESSAGES: :[[@LINE-4]]:11: note: 'd' is constructed by 'make_ddp', called here
  // CHECK-MESSAGES-ONCE: :[[@LINE-3]]:13: warning: forward call on DDP-wrapped 'd'
  (o1 + o2).sum().backward();
}
