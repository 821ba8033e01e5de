// A DDP object that is a parameter is constructed by the callers: every call
// of its function in the translation unit (through helpers that pass it on,
// methods and lambdas called directly) is followed to the caller's
// construction, which gets the fix, once, with a note naming the calls. When
// every caller's object sets broadcast_buffers(false) (or broadcasts once per
// backward) there is no finding; when a caller is not seen, the note says
// why and no construction is fixed.
// RUN: %check_ddpguard %s %t -- %mock_flags
// RUN: %check_ddpguard --fix-mode=once-per-backward --check-suffix=ONCE %s %t-once -- %mock_flags -DONCE
// RUN: %check_ddpguard --unfixed --check-suffix=UNSEEN %s %t-unseen -- %mock_flags -DUNSEEN
#include <nets.h>

#if !defined(ONCE) && !defined(UNSEEN)
void byReference(DDP &m, torch::Tensor a, torch::Tensor b) {
  auto o1 = m(a);
  auto o2 = m(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'm' before the backward of the forward at line [[@LINE-2]]
  // CHECK-MESSAGES: :[[@LINE+6]]:7: note: 'model' is constructed here and is passed to 'byReference'; 'broadcast_buffers' is true by default
  // CHECK-MESSAGES: :[[@LINE-3]]:13: note: the fix sets 'broadcast_buffers' to false, which changes behaviour
  (o1 + o2).sum().backward();
}

void callByReference(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP model(net, pg);
  // CHECK-FIXES: {{^}}  DDP model(net, pg, ddpguard::DDPOptions().broadcast_buffers(false));{{$}}
  byReference(model, a, b);
}

void byPointer(DDP *m, torch::Tensor a, torch::Tensor b) {
  auto o1 = (*m)(a);
  auto o2 = m->forward(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'm'
  // CHECK-MESSAGES: :[[@LINE+5]]:7: note: 'model' is constructed here and is passed to 'byPointer'; 'broadcast_buffers' is set to true
  (o1 + o2).sum().backward();
}

void callByPointer(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP model(net, pg, ddpguard::DDPOptions().broadcast_buffers(true));
  // CHECK-FIXES: {{^}}  DDP model(net, pg, ddpguard::DDPOptions().broadcast_buffers(false));{{$}}
  byPointer(&model, a, b);
}

// A const shared_ptr, from a make_shared variable and from a temporary.
void bySharedPtr(const std::shared_ptr<DDP> &m, torch::Tensor a,
                 torch::Tensor b) {
  auto o1 = m->forward(a);
  auto o2 = m->forward(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'm'
  // CHECK-MESSAGES: :[[@LINE+6]]:16: note: 'model' is constructed here and is passed to 'bySharedPtr'; 'broadcast_buffers' is true by default
  // CHECK-MESSAGES: :[[@LINE+8]]:15: note: the temporary is constructed here and is passed to 'bySharedPtr'; 'broadcast_buffers' is true by default
  (o1 + o2).sum().backward();
}

void callBySharedPtr(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  auto model = std::make_shared<DDP>(net, pg);
  // CHECK-FIXES: {{^}}  auto model = std::make_shared<DDP>(net, pg, ddpguard::DDPOptions().broadcast_buffers(false));{{$}}
  bySharedPtr(model, a, b);
  bySharedPtr(std::make_shared<DDP>(net, pg), a, b);
  // CHECK-FIXES: {{^}}  bySharedPtr(std::make_shared<DDP>(net, pg, ddpguard::DDPOptions().broadcast_buffers(false)), a, b);{{$}}
}

// Helper calls helper: the chain names each call.
void inner(DDP &m, torch::Tensor a, torch::Tensor b) {
  auto o1 = m(a);
  auto o2 = m(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'm'
  // CHECK-MESSAGES: :[[@LINE+8]]:9: note: 'model' is constructed here and reaches 'inner' through 'outer' → 'inner'; 'broadcast_buffers' is true by default
  (o1 + o2).sum().backward();
}

void outer(DDP &m, torch::Tensor a, torch::Tensor b) { inner(m, a, b); }

struct Trainer {
  void run(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
    DDP model(net, pg);
    // CHECK-FIXES: {{^}}    DDP model(net, pg, ddpguard::DDPOptions().broadcast_buffers(false));{{$}}
    outer(model, a, b);
  }
};

// Two callers: both constructions are fixed; the one already false is not
// touched.
struct Steps {
  void step(DDP &m, torch::Tensor a, torch::Tensor b) {
    auto o1 = m(a);
    auto o2 = m(b);
    // CHECK-MESSAGES: :[[@LINE-1]]:15: warning: forward call on DDP-wrapped 'm'
    // CHECK-MESSAGES: :[[@LINE+8]]:7: note: 'first' is constructed here and is passed to 'step'; 'broadcast_buffers' is true by default
    // CHECK-MESSAGES: :[[@LINE+12]]:7: note: 'second' is constructed here and is passed to 'step'; 'broadcast_buffers' is true by default
    // CHECK-MESSAGES: :[[@LINE+16]]:7: note: 'quiet' is constructed here and is passed to 'step'; 'broadcast_buffers' is false
    (o1 + o2).sum().backward();
  }
};

void callStepFirst(Steps &s, Net net, PG pg, torch::Tensor a) {
  DDP first(net, pg);
  // CHECK-FIXES: {{^}}  DDP first(net, pg, ddpguard::DDPOptions().broadcast_buffers(false));{{$}}
  s.step(first, a, a);
}
void callStepSecond(Steps &s, Net net, PG pg, torch::Tensor a) {
  DDP second(net, pg, ddpguard::DDPOptions().find_unused_parameters(true));
  // CHECK-FIXES: {{^}}  DDP second(net, pg, ddpguard::DDPOptions().find_unused_parameters(true).broadcast_buffers(false));{{$}}
  s.step(second, a, a);
}
void callStepQuiet(Steps &s, Net net, PG pg, torch::Tensor a) {
  DDP quiet(net, pg, ddpguard::DDPOptions().broadcast_buffers(false));
  // CHECK-FIXES: {{^}}  DDP quiet(net, pg, ddpguard::DDPOptions().broadcast_buffers(false));{{$}}
  s.step(quiet, a, a);
}

// Every caller sets broadcast_buffers(false): no finding.
void allQuiet(DDP &m, torch::Tensor a, torch::Tensor b) {
  auto o1 = m(a);
  auto o2 = m(b);
  (o1 + o2).sum().backward();
}
void callAllQuiet(Net net, PG pg, torch::Tensor a) {
  DDP one(net, pg, ddpguard::DDPOptions().broadcast_buffers(false));
  auto two = std::make_shared<DDP>(
      net, pg, ddpguard::DDPOptions().broadcast_buffers(false));
  allQuiet(one, a, a);
  allQuiet(*two, a, a);
}

// One construction reached by two helpers' findings and its own: edited once.
void helperOne(DDP &m, torch::Tensor a, torch::Tensor b) {
  auto o1 = m(a);
  auto o2 = m(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'm'
  (o1 + o2).sum().backward();
}
void helperTwo(DDP &m, torch::Tensor a, torch::Tensor b) {
  auto o1 = m(a);
  auto o2 = m(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'm'
  (o1 + o2).sum().backward();
}
void callBothHelpers(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP shared(net, pg);
  // CHECK-FIXES: {{^}}  DDP shared(net, pg, ddpguard::DDPOptions().broadcast_buffers(false));{{$}}
  helperOne(shared, a, b);
  helperTwo(shared, a, b);
  auto o1 = shared(a);
  auto o2 = shared(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'shared'
  (o1 + o2).sum().backward();
}

// A lambda called directly.
void callLambda(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP model(net, pg);
  // CHECK-FIXES: {{^}}  DDP model(net, pg, ddpguard::DDPOptions().broadcast_buffers(false));{{$}}
  auto step = [](DDP &m, torch::Tensor x, torch::Tensor y) {
    auto o1 = m(x);
    auto o2 = m(y);
    // CHECK-MESSAGES: :[[@LINE-1]]:15: warning: forward call on DDP-wrapped 'm'
    // CHECK-MESSAGES: :[[@LINE-6]]:7: note: 'model' is constructed here and is passed to the lambda; 'broadcast_buffers' is true by default
    (o1 + o2).sum().backward();
  };
  step(model, a, b);
}
#endif

#ifdef ONCE
void onceStep(DDP &m, torch::Tensor a, torch::Tensor b) {
  auto o1 = m(a);
  auto o2 = m(b);
  // CHECK-MESSAGES-ONCE: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'm'
  // CHECK-MESSAGES-ONCE: :[[@LINE+6]]:7: note: 'model' is constructed here and is passed to 'onceStep'; 'broadcast_buffers' is true by default
  // CHECK-MESSAGES-ONCE: :[[@LINE+10]]:7: note: 'synced' is constructed here and is passed to 'onceStep'; buffers are broadcast once per backward
  (o1 + o2).sum().backward();
}

void callOnce(Net net, PG pg, torch::Tensor a) {
  DDP model(net, pg);
  // CHECK-FIXES-ONCE: {{^}}  DDP model(net, pg, ddpguard::DDPOptions().buffer_broadcast(ddpguard::BufferBroadcast::kOncePerBackward));{{$}}
  onceStep(model, a, a);
}
void callOnceSynced(Net net, PG pg, torch::Tensor a) {
  DDP synced(net, pg, ddpguard::DDPOptions().buffer_broadcast(
                          ddpguard::BufferBroadcast::kOncePerBackward));
  onceStep(synced, a, a);
}

// Every caller broadcasts once per backward: no finding.
void allOnce(DDP &m, torch::Tensor a, torch::Tensor b) {
  auto o1 = m(a);
  auto o2 = m(b);
  (o1 + o2).sum().backward();
}
void callAllOnce(Net net, PG pg, torch::Tensor a) {
  DDP one(net, pg, ddpguard::DDPOptions().buffer_broadcast(
                       ddpguard::BufferBroadcast::kOncePerBackward));
  allOnce(one, a, a);
}
#endif

#ifdef UNSEEN
// Not called in this file: the construction may be in another one.
void notCalled(DDP &m, torch::Tensor a, torch::Tensor b) {
  auto o1 = m(a);
  auto o2 = m(b);
  // CHECK-MESSAGES-UNSEEN: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'm'
  // CHECK-MESSAGES-UNSEEN: :[[@LINE-4]]:21: note: 'm' is constructed out of sight; assuming 'broadcast_buffers' is true, the default
  // CHECK-MESSAGES-UNSEEN: :[[@LINE-5]]:6: note: 'm' is not followed to its construction among the callers: 'notCalled' is not called in this translation unit
  // CHECK-MESSAGES-UNSEEN: :[[@LINE-4]]:13: note: cannot set 'broadcast_buffers' to false automatically: the construction of 'm' is not visible here
  (o1 + o2).sum().backward();
}

// One caller is followed, the other passes an object whose construction is
// not seen: nothing is fixed.
void oneUnseen(DDP &m, torch::Tensor a, torch::Tensor b) {
  auto o1 = m(a);
  auto o2 = m(b);
  // CHECK-MESSAGES-UNSEEN: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'm'
  // CHECK-MESSAGES-UNSEEN: :[[@LINE+7]]:13: note: 'm' is not followed to its construction among the callers: the construction of 'registry', passed here for 'm', is not visible
  (o1 + o2).sum().backward();
}
extern DDP &registry;
void callOneUnseen(Net net, PG pg, torch::Tensor a) {
  DDP model(net, pg);
  oneUnseen(model, a, a);
  oneUnseen(registry, a, a);
}

// The function's address is taken: it may be called where we cannot see.
void escapes(DDP &m, torch::Tensor a, torch::Tensor b) {
  auto o1 = m(a);
  auto o2 = m(b);
  // CHECK-MESSAGES-UNSEEN: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'm'
  // CHECK-MESSAGES-UNSEEN: :[[@LINE+6]]:52: note: 'm' is not followed to its construction among the callers: 'escapes' is used here other than by a direct call, so it may be called where it is not seen
  (o1 + o2).sum().backward();
}
void callEscapes(Net net, PG pg, torch::Tensor a) {
  DDP model(net, pg);
  escapes(model, a, a);
  void (*f)(DDP &, torch::Tensor, torch::Tensor) = escapes;
  f(model, a, a);
}
#endif
