// The GAN shape with a DDP-wrapped discriminator: the DDP check reports the
// second forward as it does alone (its broadcast overwrites the BatchNorm
// statistics D(real) saved), and the step check the step of the optimizer
// over the DDP object's module. The broadcast fix leaves the step's finding.
// RUN: %check_ddpguard --unfixed %s %t -- %mock_flags
#include <nets.h>

void trainStep(Net net, PG pg, torch::Tensor real, torch::Tensor fake) {
  DDP d(net, pg);
  torch::optim::Adam optD(d.module()->parameters());
  auto dReal = d(real);
  auto dFake = d(fake);
  auto lossD = dReal.mean() - dFake.mean();
  optD.zero_grad();
  lossD.backward({}, /*retain_graph=*/true);
  optD.step();
  dFake.mean().backward();
}
// CHECK-MESSAGES: :[[@LINE-7]]:16: warning: forward call on DDP-wrapped 'd' before the backward of the forward at line [[@LINE-8]]: DDP broadcasts buffers before every forward and overwrites the buffers that forward saved for backward [ddp-multiple-forward-before-backward]
// CHECK-MESSAGES: :[[@LINE-9]]:16: note: earlier forward on 'd' is here; its saved buffers are overwritten
// CHECK-MESSAGES: :[[@LINE-6]]:9: note: the backward that fails is here
// CHECK-MESSAGES: :[[@LINE-13]]:7: note: 'broadcast_buffers' is true by default in this construction of 'd'
// CHECK-MESSAGES: :[[@LINE-11]]:16: note: or fuse the forwards into one call
// CHECK-MESSAGES: :[[@LINE-12]]:16: note: the fix sets 'broadcast_buffers' to false, which changes behaviour
// CHECK-MESSAGES: :[[@LINE-13]]:16: note: judged by LibTorch 2.11.0, assumed
// CHECK-MESSAGES: :[[@LINE-14]]:16: note: or build against LibTorch 2.12.1 or later
// CHECK-MESSAGES: :[[@LINE-11]]:3: warning: step of 'optD' writes the parameters of 'd' in place, which the forward at line [[@LINE-15]] saved for backward; the backward at line [[@LINE-10]] through that forward will fail [optimizer-step-before-backward]
// CHECK-MESSAGES: :[[@LINE-16]]:16: note: forward on 'd' is here; it saved the parameters of 'd' for backward
// CHECK-MESSAGES: :[[@LINE-12]]:16: note: the backward that fails is here
// CHECK-MESSAGES: :[[@LINE-14]]:3: note: no fix is offered: moving the step after the backward at line [[@LINE-13]]
// CHECK-MESSAGES: :[[@LINE-15]]:3: note: judged by LibTorch 2.11.0, assumed
// CHECK-FIXES: DDP d(net, pg, ddpguard::DDPOptions().broadcast_buffers(false));
