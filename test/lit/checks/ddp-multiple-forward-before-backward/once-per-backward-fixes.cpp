// --fix-mode=once-per-backward: every construction form the broadcast fix
// handles gets buffer_broadcast(ddpguard::BufferBroadcast::kOncePerBackward)
// instead (the rule file's once-per-backward setter): add the options, extend
// a chain, an options variable (initialised, set later, a parameter),
// make_shared, a member initialiser; one fix for several warnings. The note
// says it keeps buffers synchronised, and the fixed file is clean.
// RUN: %check_ddpguard --fix-mode=once-per-backward %s %t -- %mock_flags
#include <nets.h>

void noOptions(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg);
  // CHECK-FIXES: {{^}}  DDP d(net, pg, ddpguard::DDPOptions().buffer_broadcast(ddpguard::BufferBroadcast::kOncePerBackward));{{$}}
  auto o1 = d(a);
  auto o2 = d(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd' before the backward of the forward at line [[@LINE-2]]
  // CHECK-MESSAGES: :[[@LINE-3]]:13: note: earlier forward on 'd' is here
  // CHECK-MESSAGES: :[[@LINE+4]]:19: note: the backward that fails is here
  // CHECK-MESSAGES: :[[@LINE-7]]:7: note: 'broadcast_buffers' is true by default in this construction of 'd'
  // CHECK-MESSAGES: :[[@LINE-5]]:13: note: or fuse the forwards into one call
  // CHECK-MESSAGES: :[[@LINE-6]]:13: note: the fix broadcasts buffers once per backward, which keeps them synchronised: buffers are broadcast from rank 0 on the first forward after a backward, and the later forwards before the next backward reuse them ('buffer_broadcast(ddpguard::BufferBroadcast::kOncePerBackward)' at the construction of 'd'){{$}}
  (o1 + o2).sum().backward();
}

// broadcast_buffers(true) stays: the policy says when to broadcast.
void setTrue(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg, ddpguard::DDPOptions().broadcast_buffers(true));
  // CHECK-FIXES: {{^}}  DDP d(net, pg, ddpguard::DDPOptions().broadcast_buffers(true).buffer_broadcast(ddpguard::BufferBroadcast::kOncePerBackward));{{$}}
  auto o1 = d(a);
  auto o2 = d(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd'
  (o1 + o2).sum().backward();
}

void extendChain(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg, ddpguard::DDPOptions().find_unused_parameters(true));
  // CHECK-FIXES: {{^}}  DDP d(net, pg, ddpguard::DDPOptions().find_unused_parameters(true).buffer_broadcast(ddpguard::BufferBroadcast::kOncePerBackward));{{$}}
  auto o1 = d(a);
  auto o2 = d(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd'
  (o1 + o2).sum().backward();
}

void optionsVariable(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  auto options = ddpguard::DDPOptions().bucket_cap_mb(10);
  // CHECK-FIXES: {{^}}  auto options = ddpguard::DDPOptions().bucket_cap_mb(10).buffer_broadcast(ddpguard::BufferBroadcast::kOncePerBackward);{{$}}
  DDP d(net, pg, options);
  auto o1 = d(a);
  auto o2 = d(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd'
  (o1 + o2).sum().backward();
}

// A default-constructed options variable set later: the policy is set where
// the options are passed.
void optionsSetLater(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  ddpguard::DDPOptions options;
  options.broadcast_buffers(true);
  DDP d(net, pg, options);
  // CHECK-FIXES: {{^}}  DDP d(net, pg, options.buffer_broadcast(ddpguard::BufferBroadcast::kOncePerBackward));{{$}}
  auto o1 = d(a);
  auto o2 = d(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd'
  // CHECK-MESSAGES: :[[@LINE-6]]:29: note: 'broadcast_buffers' is set to true here
  (o1 + o2).sum().backward();
}

// Options from a const reference parameter: set on a copy.
void optionsParameter(Net net, PG pg, const ddpguard::DDPOptions &options,
                      torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg, options);
  // CHECK-FIXES: {{^}}  DDP d(net, pg, ddpguard::DDPOptions(options).buffer_broadcast(ddpguard::BufferBroadcast::kOncePerBackward));{{$}}
  auto o1 = d(a);
  auto o2 = d(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd'
  (o1 + o2).sum().backward();
}

void makeShared(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  auto d = std::make_shared<DDP>(net, pg);
  // CHECK-FIXES: {{^}}  auto d = std::make_shared<DDP>(net, pg, ddpguard::DDPOptions().buffer_broadcast(ddpguard::BufferBroadcast::kOncePerBackward));{{$}}
  auto o1 = d->forward(a);
  auto o2 = d->forward(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd'
  (o1 + o2).sum().backward();
}

class Trainer {
public:
  Trainer(Net net, PG pg) : model_(net, pg) {}
  // CHECK-FIXES: {{^}}  Trainer(Net net, PG pg) : model_(net, pg, ddpguard::DDPOptions().buffer_broadcast(ddpguard::BufferBroadcast::kOncePerBackward)) {}{{$}}
  void step(const torch::Tensor &a, const torch::Tensor &b) {
    auto z1 = model_(a);
    auto z2 = model_(b);
    // CHECK-MESSAGES: :[[@LINE-1]]:15: warning: forward call on DDP-wrapped 'model_'
    (z1 + z2).sum().backward();
  }

private:
  DDP model_;
};

// Three forwards: two warnings, one fix at the construction.
void threeViews(Net net, PG pg, torch::Tensor a, torch::Tensor b,
                torch::Tensor c) {
  DDP d(net, pg);
  // CHECK-FIXES: {{^}}  DDP d(net, pg, ddpguard::DDPOptions().buffer_broadcast(ddpguard::BufferBroadcast::kOncePerBackward));{{$}}
  auto o1 = d(a);
  auto o2 = d(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd' before the backward of the forward at line [[@LINE-2]]
  auto o3 = d(c);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd' before the backward of the forward at line [[@LINE-4]]
  (o1 + o2 + o3).sum().backward();
}

// Already once per backward: no forward after the first broadcasts, so
// nothing is reported, through a chain, an options variable, a setter call
// on it or a constant of that value.
void alreadyChained(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg,
        ddpguard::DDPOptions().buffer_broadcast(
            ddpguard::BufferBroadcast::kOncePerBackward));
  auto o1 = d(a);
  auto o2 = d(b);
  (o1 + o2).sum().backward();
}

void alreadySetLater(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  ddpguard::DDPOptions options;
  constexpr auto kPolicy = ddpguard::BufferBroadcast::kOncePerBackward;
  options.buffer_broadcast(kPolicy);
  auto copied = options;
  DDP d(net, pg, copied);
  auto o1 = d(a);
  auto o2 = d(b);
  (o1 + o2).sum().backward();
}

// Every forward is still a broadcast under kEveryForward, or under a policy
// not known at compile time: reported.
void everyForward(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg,
        ddpguard::DDPOptions().buffer_broadcast(
            ddpguard::BufferBroadcast::kEveryForward));
  // CHECK-FIXES: {{^}}            ddpguard::BufferBroadcast::kEveryForward).buffer_broadcast(ddpguard::BufferBroadcast::kOncePerBackward));{{$}}
  auto o1 = d(a);
  auto o2 = d(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd'
  (o1 + o2).sum().backward();
}

void unknownPolicy(Net net, PG pg, ddpguard::BufferBroadcast policy,
                   torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg, ddpguard::DDPOptions().buffer_broadcast(policy));
  // CHECK-FIXES: {{^}}  DDP d(net, pg, ddpguard::DDPOptions().buffer_broadcast(policy).buffer_broadcast(ddpguard::BufferBroadcast::kOncePerBackward));{{$}}
  auto o1 = d(a);
  auto o2 = d(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd'
  (o1 + o2).sum().backward();
}

// A forward per loop iteration, one backward after the loop (a recurrent
// cell per step, multi-crop over a range): only the first iteration's
// forward broadcasts under the policy, so the fix applies and the fixed
// loop is clean.
void forwardPerIteration(Net net, PG pg, std::vector<torch::Tensor> crops) {
  DDP d(net, pg);
  // CHECK-FIXES: {{^}}  DDP d(net, pg, ddpguard::DDPOptions().buffer_broadcast(ddpguard::BufferBroadcast::kOncePerBackward));{{$}}
  torch::Tensor loss;
  for (const auto &crop : crops)
    loss = loss + d(crop).sum();
  // CHECK-MESSAGES: :[[@LINE-1]]:19: warning: forward call on DDP-wrapped 'd' before the backward of the forward at line [[@LINE-1]]
  // CHECK-MESSAGES: :[[@LINE-2]]:19: note: cannot fuse the forwards: the forwards are different iterations of a loop
  // CHECK-MESSAGES: :[[@LINE-3]]:19: note: the fix broadcasts buffers once per backward
  loss.backward();
}
