// --fix-mode=fuse with statements between the forwards: the forwards move
// past them, down to a later forward or up to an earlier one, and become one
// fused call, where the move provably keeps the program's meaning
// (fuse-reorder-withheld.cpp: where it does not). The statements between stay
// as written, with their comments.
// RUN: %check_ddpguard --fix-mode=fuse %s %t -- %mock_flags
#include <nets.h>

namespace at {
// A free operator, as LibTorch declares its arithmetic.
Tensor operator-(double, const Tensor &);
} // namespace at

// WGAN-GP: the interpolation between the forwards reads neither output, and
// Net's forward draws no random numbers, so the first two forwards move down
// past the draw.
void interpolation(Net net, PG pg, torch::Tensor real, torch::Tensor fake) {
  DDP d(net, pg);
  auto realScore = d(real);
  auto fakeScore = d(fake); // second view
  // CHECK-MESSAGES: :[[@LINE-1]]:20: warning: forward call on DDP-wrapped 'd'
  auto eps = torch::randn_like(real);
  auto [lo, hi] = std::make_pair(eps, 1.0 - eps);
  auto mixed = lo * real + hi * fake;
  auto mixedScore = d(mixed);
  // CHECK-MESSAGES: :[[@LINE-1]]:21: warning: forward call on DDP-wrapped 'd'
  // CHECK-FIXES: {{^}}  DDP d(net, pg);{{$}}
  // CHECK-FIXES-NEXT: {{^}}  // second view{{$}}
  // CHECK-FIXES-NEXT: {{^}}  //{{$}}
  // CHECK-FIXES-NEXT: {{^}}  auto eps = torch::randn_like(real);{{$}}
  // CHECK-FIXES-NEXT: {{^}}  auto [lo, hi] = std::make_pair(eps, 1.0 - eps);{{$}}
  // CHECK-FIXES-NEXT: {{^}}  auto mixed = lo * real + hi * fake;{{$}}
  // CHECK-FIXES-NEXT: {{^}}  auto [realScore, fakeScore, mixedScore] = d.forward_group(real, fake, mixed);{{$}}
  (realScore + fakeScore + mixedScore).sum().backward();
}

// Lazy R1: the first output is differentiated between the forwards
// (torch::autograd::grad accumulates nothing into the parameters); the later
// forward's argument is older than the first forward, so it moves up.
void penaltyBetween(Net net, PG pg, torch::Tensor real, torch::Tensor fake) {
  DDP d(net, pg);
  auto realOut = d(real);
  auto grads = torch::autograd::grad({realOut.sum()}, {real}, {},
                                     /*RetainGraph=*/true, /*CreateGraph=*/true);
  auto r1 = grads[0].pow(2.0).sum();
  auto fakeOut = d(fake);
  // CHECK-MESSAGES: :[[@LINE-1]]:18: warning: forward call on DDP-wrapped 'd'
  // CHECK-FIXES: {{^}}  auto [realOut, fakeOut] = d.forward_group(real, fake);{{$}}
  // CHECK-FIXES-NEXT: {{^}}  auto grads = torch::autograd::grad({realOut.sum()}, {real}, {},{{$}}
  // CHECK-FIXES-NEXT: {{^}}                                     /*RetainGraph=*/true, /*CreateGraph=*/true);{{$}}
  // CHECK-FIXES-NEXT: {{^}}  auto r1 = grads[0].pow(2.0).sum();{{$}}
  // CHECK-FIXES-NEXT: {{^}}  //{{$}}
  fakeOut.sum().backward();
  r1.backward();
}

// The first forward moves down past the first statement, the third up past
// the second (which uses the second output): the fused call takes the second
// forward's place.
void bothWays(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg);
  auto o1 = d(a);
  auto c = a * 2.0;
  auto o2 = d(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd'
  auto s = o2.sum();
  auto o3 = d(c);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd'
  // CHECK-FIXES: {{^}}  DDP d(net, pg);{{$}}
  // CHECK-FIXES-NEXT: {{^}}  auto c = a * 2.0;{{$}}
  // CHECK-FIXES-NEXT: {{^}}  auto [o1, o2, o3] = d.forward_group(a, b, c);{{$}}
  // CHECK-FIXES-NEXT: {{^}}  //{{$}}
  // CHECK-FIXES-NEXT: {{^}}  auto s = o2.sum();{{$}}
  // CHECK-FIXES-NEXT: {{^}}  //{{$}}
  (o1.sum() + s + o3.sum()).backward();
}

// Declared types and assignments move up as they are fused elsewhere.
void declaredTypesMoveUp(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg);
  torch::Tensor o1 = d(a);
  auto s = o1.sum();
  const torch::Tensor o2 = d(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:28: warning: forward call on DDP-wrapped 'd'
  // CHECK-FIXES: {{^}}  auto ddpguard_outputs_1 = d.forward_group(a, b);{{$}}
  // CHECK-FIXES-NEXT: {{^}}  torch::Tensor o1 = std::get<0>(std::move(ddpguard_outputs_1));{{$}}
  // CHECK-FIXES-NEXT: {{^}}  const torch::Tensor o2 = std::get<1>(std::move(ddpguard_outputs_1));{{$}}
  // CHECK-FIXES-NEXT: {{^}}  auto s = o1.sum();{{$}}
  (s + o2.sum()).backward();
}

void assignmentsMoveUp(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg);
  torch::Tensor o1, o2;
  o1 = d(a);
  auto s = o1.sum();
  o2 = d(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:8: warning: forward call on DDP-wrapped 'd'
  // CHECK-FIXES: {{^}}  std::tie(o1, o2) = d.forward_group(a, b);{{$}}
  // CHECK-FIXES-NEXT: {{^}}  auto s = o1.sum();{{$}}
  (s + o2.sum()).backward();
}

// Net's forward draws no random numbers: an argument that draws may be
// evaluated before the first forward.
void randomArgument(Net net, PG pg, torch::Tensor a) {
  DDP d(net, pg);
  auto o1 = d(a);
  auto o2 = d(torch::randn_like(a));
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd'
  // CHECK-FIXES: {{^}}  auto ddpguard_input_1 = torch::randn_like(a);{{$}}
  // CHECK-FIXES-NEXT: {{^}}  auto [o1, o2] = d.forward_group(a, ddpguard_input_1);{{$}}
  (o1 + o2).sum().backward();
}
