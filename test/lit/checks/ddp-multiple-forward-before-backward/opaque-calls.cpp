// Calls whose body the checker cannot see (declared here, defined elsewhere)
// hand back their arguments' history and that of values that escaped before
// them, nothing else.
// RUN: %check_ddpguard %s %t -- %mock_flags
#include <nets.h>

torch::Tensor next_batch();
void log_value(float value);
void log_tensor(const torch::Tensor &t);
torch::Tensor last_logged();
torch::Tensor identity(const torch::Tensor &t);

struct Logger {
  void record(const torch::Tensor &t);
  torch::Tensor latest() const;
};

// A scalar logged from the first output: nothing of its graph escapes.
void loggedItem(Net net, PG pg, torch::Tensor x) {
  DDP D(net, pg);
  auto z1 = D(x);
  log_value(z1.mean().item<float>());
  auto z2 = D(next_batch());
  z2.sum().backward();
}

// A warm-up forward whose output is detached and dropped.
void detachedWarmUp(Net net, PG pg, torch::Tensor warm) {
  DDP D(net, pg);
  D(warm).detach();
  auto z = D(next_batch());
  z.sum().backward();
}

// The output goes into an opaque call and what comes back out of another
// may carry it: reported, and the notes say it is an assumption.
void escapedIntoLogger(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP D(net, pg);
  // CHECK-FIXES: DDP D(net, pg, ddpguard::DDPOptions().broadcast_buffers(false));
  auto z1 = D(a);
  log_tensor(z1);
  auto z2 = D(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'D' before the backward of the forward at line [[@LINE-3]]: DDP broadcasts buffers
  // CHECK-MESSAGES: :[[@LINE-4]]:13: note: earlier forward on 'D' is here
  (z2 + last_logged()).sum().backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:30: note: the backward that fails is here
  // CHECK-MESSAGES: :[[@LINE-2]]:9: note: assuming that this call, whose body is not visible, may return the history of values that escaped earlier
  // CHECK-MESSAGES: :[[@LINE-7]]:3: note: a value derived from a forward escapes here, into code the checker cannot see
}

// The same through a member function of a class we cannot see.
void escapedIntoMember(Net net, PG pg, Logger &logger, torch::Tensor a,
                       torch::Tensor b) {
  DDP D(net, pg);
  // CHECK-FIXES: DDP D(net, pg, ddpguard::DDPOptions().broadcast_buffers(false));
  logger.record(D(a));
  auto z2 = D(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'D' before the backward of the forward at line [[@LINE-2]]: DDP broadcasts buffers
  (z2 * logger.latest()).sum().backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:9: note: assuming that this call, whose body is not visible, may return the history of values that escaped earlier
}

// An opaque call's result carries its argument's history: no assumption.
void throughArgument(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP D(net, pg);
  // CHECK-FIXES: DDP D(net, pg, ddpguard::DDPOptions().broadcast_buffers(false));
  auto z1 = D(a);
  auto z2 = D(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'D' before the backward of the forward at line [[@LINE-2]]: DDP broadcasts buffers
  (identity(z1) + z2).sum().backward();
}

// Something escaped, but the backward never reads an opaque result.
void escapedButUnread(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP D(net, pg);
  auto z1 = D(a);
  log_tensor(z1);
  auto z2 = D(b);
  z2.sum().backward();
}

// Escapes and reads through helpers whose bodies are visible. A helper that
// does no forward or backward but reaches an opaque call (or a member or a
// global) counts as opaque itself; a summarised helper hands its reads of
// escaped values, and what it lets escape, to its callers.
void logThrough(const torch::Tensor &t) { log_tensor(t); }
torch::Tensor readBack() { return last_logged(); }
torch::Tensor encodeAndLog(DDP &d, const torch::Tensor &x) {
  auto z = d(x);
  log_tensor(z);
  return z.detach();
}
void stepReadingBack(DDP &d, const torch::Tensor &b) {
  auto z2 = d(b);
  (z2 + last_logged()).sum().backward();
}

void escapedThroughHelper(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP D(net, pg);
  // CHECK-FIXES: DDP D(net, pg, ddpguard::DDPOptions().broadcast_buffers(false));
  auto z1 = D(a);
  logThrough(z1);
  auto z2 = D(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'D' before the backward of the forward at line [[@LINE-3]]: DDP broadcasts buffers
  (z2 + last_logged()).sum().backward();
  // CHECK-MESSAGES: :[[@LINE-4]]:3: note: a value derived from a forward escapes here, into code the checker cannot see
}

void readBackThroughHelper(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP D(net, pg);
  // CHECK-FIXES: DDP D(net, pg, ddpguard::DDPOptions().broadcast_buffers(false));
  auto z1 = D(a);
  log_tensor(z1);
  auto z2 = D(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'D' before the backward of the forward at line [[@LINE-3]]: DDP broadcasts buffers
  (z2 + readBack()).sum().backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:9: note: assuming that this call may hand back the history of values that escaped earlier
}

void escapedInsideSummarisedHelper(Net net, PG pg, torch::Tensor a,
                                   torch::Tensor b) {
  DDP D(net, pg);
  // CHECK-FIXES: DDP D(net, pg, ddpguard::DDPOptions().broadcast_buffers(false));
  encodeAndLog(D, a);
  auto z2 = D(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'D' before the backward of the forward at line [[@LINE-2]]: DDP broadcasts buffers
  (z2 + last_logged()).sum().backward();
}

void readBackInsideSummarisedHelper(Net net, PG pg, torch::Tensor a,
                                    torch::Tensor b) {
  DDP D(net, pg);
  // CHECK-FIXES: DDP D(net, pg, ddpguard::DDPOptions().broadcast_buffers(false));
  auto z1 = D(a);
  log_tensor(z1);
  stepReadingBack(D, b);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: forward call on DDP-wrapped 'D' before the backward of the forward at line [[@LINE-3]]: DDP broadcasts buffers
}

// The helper lets nothing escape that the later read could carry back.
void helperLogsADetachedScalar(Net net, PG pg, torch::Tensor a,
                               torch::Tensor b) {
  DDP D(net, pg);
  auto z1 = D(a);
  log_value(z1.mean().item<float>());
  auto z2 = D(b);
  (z2 + readBack()).sum().backward();
}
