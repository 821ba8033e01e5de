// --fix-mode=fuse keeps the order of evaluation: the fused call evaluates its
// arguments in an unspecified order (GCC: right to left), so every argument
// that is not a plain local variable, a parameter or a constant is first
// stored in a local, in the original order, where its statement was. Plain
// variables and literals are passed as written. Declared types, attributes,
// initialisation styles and the comments between the statements stay.
// RUN: %check_ddpguard --fix-mode=fuse %s %t -- %mock_flags
#include <nets.h>

torch::Tensor next_batch();
torch::Tensor global_batch;
constexpr double kScale = 0.5;

void sideEffects(Net net, PG pg) {
  DDP d(net, pg);
  auto o1 = d(next_batch());
  auto o2 = d(next_batch());
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd'
  // CHECK-FIXES: {{^}}  auto ddpguard_input_1 = next_batch();{{$}}
  // CHECK-FIXES-NEXT: {{^}}  auto ddpguard_input_2 = next_batch();{{$}}
  // CHECK-FIXES-NEXT: {{^}}  auto [o1, o2] = d.forward_group(ddpguard_input_1, ddpguard_input_2);{{$}}
  (o1 + o2).sum().backward();
}

// Plain variables and parameters are not hoisted; only the call is.
void plainVariables(Net net, PG pg, torch::Tensor a) {
  DDP d(net, pg);
  torch::Tensor b = a * 2.0;
  auto o1 = d(a);
  auto o2 = d(next_batch());
  auto o3 = d(b);
  // CHECK-MESSAGES: :[[@LINE-2]]:13: warning: forward call on DDP-wrapped 'd'
  // CHECK-MESSAGES: :[[@LINE-2]]:13: warning: forward call on DDP-wrapped 'd'
  // CHECK-FIXES: {{^}}  torch::Tensor b = a * 2.0;{{$}}
  // CHECK-FIXES-NEXT: {{^}}  auto ddpguard_input_1 = next_batch();{{$}}
  // CHECK-FIXES-NEXT: {{^}}  auto [o1, o2, o3] = d.forward_group(a, ddpguard_input_1, b);{{$}}
  (o1 + o2 + o3).sum().backward();
}

// Literals and constants stay as written; a global is read where its
// statement was.
void literals(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg);
  auto o1 = d(a, 0.25);
  auto o2 = d(b, kScale);
  auto o3 = d(global_batch, true);
  // CHECK-MESSAGES: :[[@LINE-2]]:13: warning: forward call on DDP-wrapped 'd'
  // CHECK-MESSAGES: :[[@LINE-2]]:13: warning: forward call on DDP-wrapped 'd'
  // CHECK-FIXES: {{^}}  auto ddpguard_input_1 = global_batch;{{$}}
  // CHECK-FIXES-NEXT: {{^}}  auto [o1, o2, o3] = d.forward_group(std::make_tuple(a, 0.25), std::make_tuple(b, kScale), std::make_tuple(ddpguard_input_1, true));{{$}}
  (o1 + o2 + o3).sum().backward();
}

// Several arguments with side effects in one forward: std::make_tuple's
// order is unspecified too.
void severalArguments(Net net, PG pg, torch::Tensor mask) {
  DDP d(net, pg);
  auto o1 = d(next_batch(), next_batch());
  auto o2 = d(next_batch(), mask);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd'
  // CHECK-FIXES: {{^}}  auto ddpguard_input_1 = next_batch();{{$}}
  // CHECK-FIXES-NEXT: {{^}}  auto ddpguard_input_2 = next_batch();{{$}}
  // CHECK-FIXES-NEXT: {{^}}  auto ddpguard_input_3 = next_batch();{{$}}
  // CHECK-FIXES-NEXT: {{^}}  auto [o1, o2] = d.forward_group(std::make_tuple(ddpguard_input_1, ddpguard_input_2), std::make_tuple(ddpguard_input_3, mask));{{$}}
  (o1 + o2).sum().backward();
}

// Declared types that are not 'auto' stay, with their attributes and their
// initialisation style; the comment between the statements stays too.
void declaredTypes(Net net, PG pg) {
  DDP d(net, pg);
  torch::Tensor o1 = d(next_batch()); // first view
  // second view, below
  [[maybe_unused]] const torch::Tensor o2(d(next_batch()));
  torch::Tensor o3{d(next_batch())};
  // CHECK-MESSAGES: :[[@LINE-2]]:43: warning: forward call on DDP-wrapped 'd'
  // CHECK-MESSAGES: :[[@LINE-2]]:20: warning: forward call on DDP-wrapped 'd'
  // CHECK-FIXES: {{^}}  auto ddpguard_input_1 = next_batch(); // first view{{$}}
  // CHECK-FIXES-NEXT: {{^}}  // second view, below{{$}}
  // CHECK-FIXES-NEXT: {{^}}  auto ddpguard_input_2 = next_batch();{{$}}
  // CHECK-FIXES-NEXT: {{^}}  auto ddpguard_input_3 = next_batch();{{$}}
  // CHECK-FIXES-NEXT: {{^}}  auto ddpguard_outputs_1 = d.forward_group(ddpguard_input_1, ddpguard_input_2, ddpguard_input_3);{{$}}
  // CHECK-FIXES-NEXT: {{^}}  torch::Tensor o1 = std::get<0>(std::move(ddpguard_outputs_1));{{$}}
  // CHECK-FIXES-NEXT: {{^}}  {{\[\[}}maybe_unused]] const torch::Tensor o2(std::get<1>(std::move(ddpguard_outputs_1)));{{$}}
  // CHECK-FIXES-NEXT: {{^}}  torch::Tensor o3{std::get<2>(std::move(ddpguard_outputs_1))};{{$}}
  (o1 + o3).sum().backward();
}

// Assignments: the hoisted arguments are new locals, then std::tie.
void assignments(Net net, PG pg, torch::Tensor a) {
  DDP d(net, pg);
  torch::Tensor o1, o2;
  o1 = d(next_batch());
  o2 = d(a);
  // CHECK-MESSAGES: :[[@LINE-1]]:8: warning: forward call on DDP-wrapped 'd'
  // CHECK-FIXES: {{^}}  auto ddpguard_input_1 = next_batch();{{$}}
  // CHECK-FIXES-NEXT: {{^}}  std::tie(o1, o2) = d.forward_group(ddpguard_input_1, a);{{$}}
  (o1 + o2).sum().backward();
}

// Two forwards on one line: the first goes, the line stays one line.
void oneLine(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg);
  auto o1 = d(a); auto o2 = d(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:29: warning: forward call on DDP-wrapped 'd'
  // CHECK-FIXES: {{^}}  auto [o1, o2] = d.forward_group(a, b);{{$}}
  (o1 + o2).sum().backward();
}
