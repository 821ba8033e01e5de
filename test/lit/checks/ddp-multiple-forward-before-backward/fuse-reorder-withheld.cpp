// --fix-mode=fuse withheld where moving the forwards past the statements
// between them could change the program's meaning: the note names, for each
// direction, the forward that cannot move and the statement that blocks it
// (fuse-reorder.cpp: where they move).
// RUN: %check_ddpguard --fix-mode=fuse --unfixed %s %t -- %mock_flags
#include <nets.h>

namespace at {
Tensor dropout(const Tensor &, double, bool);
} // namespace at

// A module whose forward draws random numbers.
struct DroppingImpl : torch::nn::Module {
  DroppingImpl() : bn(register_module("bn", torch::nn::BatchNorm1d(4))) {}
  torch::Tensor forward(const torch::Tensor &x) {
    return at::dropout(bn(x), 0.5, true);
  }
  torch::nn::BatchNorm1d bn;
};
TORCH_MODULE(Dropping);
using DroppingDDP = ddpguard::DistributedDataParallel<Dropping>;

void report(const torch::Tensor &);

// Down, the first forward would run after a use of its output; up, the
// second before its argument is defined.
void usesOutputAndDefinesArgument(Net net, PG pg, torch::Tensor a) {
  DDP d(net, pg);
  auto o1 = d(a);
  auto half = o1 * 0.5;
  auto o2 = d(half);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd'
  // CHECK-MESSAGES: :[[@LINE-2]]:13: note: cannot fuse the forwards: the forward at line [[@LINE-4]] cannot move down past line [[@LINE-3]], which uses its output 'o1'; the forward at line [[@LINE-2]] cannot move up past line [[@LINE-3]], which declares its argument 'half'
  (o1 + o2).sum().backward();
}

void assignsArgument(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg);
  auto o1 = d(a);
  auto s = o1.sum();
  b = b * 2.0;
  auto o2 = d(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd'
  // CHECK-MESSAGES: :[[@LINE-2]]:13: note: cannot fuse the forwards: the forward at line [[@LINE-5]] cannot move down past line [[@LINE-4]], which uses its output 'o1'; the forward at line [[@LINE-2]] cannot move up past line [[@LINE-3]], which assigns its argument 'b'
  (s + o2.sum()).backward();
}

// An in-place change of any tensor variable may reach a parameter or an
// argument through an alias.
void modifiesInPlace(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg);
  auto o1 = d(a);
  b.add_(a);
  auto o2 = d(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd'
  // CHECK-MESSAGES: :[[@LINE-2]]:13: note: cannot fuse the forwards: no forward can move past line [[@LINE-3]], which modifies 'b' in place ('add_'), maybe a parameter or an argument
  (o1 + o2).sum().backward();
}

void optimizerStep(Net net, PG pg, torch::Tensor a, torch::Tensor b,
                   torch::optim::SGD &opt) {
  DDP d(net, pg);
  auto o1 = d(a);
  opt.step();
  auto o2 = d(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd'
  // CHECK-MESSAGES: :[[@LINE-2]]:13: note: cannot fuse the forwards: no forward can move past line [[@LINE-3]], which calls 'step' and so changes parameters or gradients
  (o1 + o2).sum().backward();
}

void moduleCall(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg);
  auto o1 = d(a);
  net->eval();
  auto o2 = d(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd'
  // CHECK-MESSAGES: :[[@LINE-2]]:13: note: cannot fuse the forwards: no forward can move past line [[@LINE-3]], which calls 'eval' on a module, maybe the wrapped one or one sharing its parameters
  (o1 + o2).sum().backward();
}

void unknownCall(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg);
  auto o1 = d(a);
  report(a);
  auto o2 = d(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd'
  // CHECK-MESSAGES: :[[@LINE-2]]:13: note: cannot fuse the forwards: no forward can move past line [[@LINE-3]], which calls 'report', whose effects are not known
  (o1 + o2).sum().backward();
}

void controlFlow(Net net, PG pg, torch::Tensor a, torch::Tensor b, bool flip) {
  DDP d(net, pg);
  auto o1 = d(a);
  if (flip)
    a = b;
  auto o2 = d(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd'
  // CHECK-MESSAGES: :[[@LINE-2]]:13: note: cannot fuse the forwards: no forward can move past line [[@LINE-4]], which is not a declaration or an expression statement
  (o1 + o2).sum().backward();
}

void gradModeGuard(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg);
  auto o1 = d(a);
  auto s = o1.sum();
  torch::AutoGradMode mode(true);
  auto o2 = d(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd'
  // CHECK-MESSAGES: :[[@LINE-2]]:13: note: cannot fuse the forwards: the forward at line [[@LINE-5]] cannot move down past line [[@LINE-4]], which uses its output 'o1'; the forward at line [[@LINE-2]] cannot move up past line [[@LINE-3]], which declares 'mode', a grad mode guard
  (s + o2.sum()).backward();
}

// The module's forward draws (dropout): moving a forward past a random draw
// would change which random numbers each one gets.
void randomDrawBetween(Dropping net, PG pg, torch::Tensor a) {
  DroppingDDP d(net, pg);
  auto o1 = d(a);
  auto noise = torch::randn_like(a);
  auto mixed = a + noise;
  auto o2 = d(mixed);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd'
  // CHECK-MESSAGES: :[[@LINE-2]]:13: note: cannot fuse the forwards: no forward can move past line [[@LINE-4]], which draws random numbers ('randn_like') and the forward may draw too: 'dropout' draws random numbers (line 16)
  (o1 + o2).sum().backward();
}

// The same for an argument: fused, it would be drawn before the first
// forward runs.
void randomArgument(Dropping net, PG pg, torch::Tensor a) {
  DroppingDDP d(net, pg);
  auto o1 = d(a);
  auto o2 = d(torch::randn_like(a));
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd'
  // CHECK-MESSAGES: :[[@LINE-2]]:13: note: cannot fuse the forwards: the argument of the forward at line [[@LINE-2]] draws random numbers ('randn_like') and would be evaluated before the forward at line [[@LINE-3]], which may draw too: 'dropout' draws random numbers (line 16)
  (o1 + o2).sum().backward();
}

// A module the analysis cannot see into is assumed to draw.
void randomDrawUnknownModule(Net net, PG pg, torch::Tensor a,
                             ddpguard::DistributedDataParallel<torch::nn::Sequential> &d) {
  auto o1 = d(a);
  auto s = o1.sum();
  auto noise = torch::randn_like(a);
  auto o2 = d(a);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd'
  // CHECK-MESSAGES: :[[@LINE-2]]:13: note: cannot fuse the forwards: the forward at line [[@LINE-5]] cannot move down past line [[@LINE-4]], which uses its output 'o1'; the forward at line [[@LINE-2]] cannot move up past line [[@LINE-3]], which draws random numbers ('randn_like') and the forward may draw too: 'torch::nn::Sequential' is not known to draw no random numbers
  (s + o2.sum() + noise.sum()).backward();
}
