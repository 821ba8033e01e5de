// Forwards inside lambdas that a library algorithm runs once per element,
// lambdas that store into captured variables, and std::function.
// RUN: %check_ddpguard %s %t -- %mock_flags
#include <nets.h>

#include <algorithm>
#include <functional>
#include <iterator>
#include <numeric>
#include <vector>

// std::transform into a back_inserter, then one backward of the stack.
void transformViews(Net net, PG pg, std::vector<torch::Tensor> views) {
  DDP D(net, pg);
  // CHECK-FIXES: DDP D(net, pg, ddpguard::DDPOptions().broadcast_buffers(false));
  std::vector<torch::Tensor> outs;
  std::transform(views.begin(), views.end(), std::back_inserter(outs),
                 [&](const torch::Tensor &v) { return D(v); });
  // CHECK-MESSAGES: :[[@LINE-1]]:55: warning: forward call on DDP-wrapped 'D' before the backward of the forward at line [[@LINE-1]]: DDP broadcasts buffers
  // CHECK-MESSAGES: :[[@LINE-3]]:3: note: 'std::transform' may run the forward more than once in this call, once per element: each run broadcasts over the buffers the run before saved
  // CHECK-MESSAGES: :[[@LINE+1]]:26: note: the backward that fails is here
  torch::cat(outs).sum().backward();
}

// std::accumulate: each term forwards, the sum is backpropagated once.
void accumulateLosses(Net net, PG pg, std::vector<torch::Tensor> batches) {
  DDP D(net, pg);
  auto loss = std::accumulate(
      batches.begin(), batches.end(), torch::zeros({}),
      [&](const torch::Tensor &sum, const torch::Tensor &b) {
        return sum + D(b).sum();
        // CHECK-MESSAGES: :[[@LINE-1]]:22: warning: forward call on DDP-wrapped 'D' before the backward of the forward at line [[@LINE-1]]: DDP broadcasts buffers
      });
  loss.backward();
}

// std::for_each storing into a vector captured by reference.
void forEachStores(Net net, PG pg, std::vector<torch::Tensor> views) {
  DDP D(net, pg);
  std::vector<torch::Tensor> outs;
  std::for_each(views.begin(), views.end(),
                [&](const torch::Tensor &v) { outs.push_back(D(v)); });
  // CHECK-MESSAGES: :[[@LINE-1]]:62: warning: forward call on DDP-wrapped 'D' before the backward of the forward at line [[@LINE-1]]: DDP broadcasts buffers
  torch::cat(outs).sum().backward();
}

// A named lambda handed to std::generate: reported at the algorithm's call.
void generateNamed(Net net, PG pg, torch::Tensor x) {
  DDP D(net, pg);
  auto sample = [&] { return D(x * 2); };
  std::vector<torch::Tensor> outs(3);
  std::generate(outs.begin(), outs.end(), sample);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: forward call on DDP-wrapped 'D' before the backward of the forward at line [[@LINE-1]]: DDP broadcasts buffers
  // CHECK-MESSAGES: :[[@LINE-4]]:30: note: the forward runs inside the lambda here
  // CHECK-MESSAGES: :[[@LINE-3]]:3: note: 'std::generate' may run the forward more than once in this call, once per element: each run broadcasts over the buffers the run before saved
  torch::cat(outs).sum().backward();
}

// A generic lambda.
void genericLambda(Net net, PG pg, std::vector<torch::Tensor> views) {
  DDP D(net, pg);
  std::vector<torch::Tensor> outs;
  std::transform(views.begin(), views.end(), std::back_inserter(outs),
                 [&](const auto &v) { return D(v).mean(); });
  // CHECK-MESSAGES: :[[@LINE-1]]:46: warning: forward call on DDP-wrapped 'D' before the backward of the forward at line [[@LINE-1]]: DDP broadcasts buffers
  torch::cat(outs).sum().backward();
}

// Each element is backpropagated inside the lambda: trains.
void backwardPerElement(Net net, PG pg, std::vector<torch::Tensor> batches) {
  DDP D(net, pg);
  std::for_each(batches.begin(), batches.end(),
                [&](const torch::Tensor &b) { D(b).sum().backward(); });
}

// The outputs do not require grad: the algorithm runs under NoGradGuard.
void transformNoGrad(Net net, PG pg, std::vector<torch::Tensor> views) {
  DDP D(net, pg);
  std::vector<torch::Tensor> outs;
  {
    torch::NoGradGuard guard;
    std::transform(views.begin(), views.end(), std::back_inserter(outs),
                   [&](const torch::Tensor &v) { return D(v); });
  }
  D(views[0]).sum().backward();
}

// A lambda that stores its forward's output into a captured variable, called
// twice directly.
void capturedStore(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP D(net, pg);
  torch::Tensor last;
  std::vector<torch::Tensor> all;
  auto encode = [&](const torch::Tensor &x) {
    last = D(x);
    all.push_back(last);
  };
  encode(a);
  encode(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: forward call on DDP-wrapped 'D' before the backward of the forward at line [[@LINE-2]]: DDP broadcasts buffers
  torch::cat(all).sum().backward();
}

// The backward runs inside the lambda, through a captured output.
void capturedBackward(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP D(net, pg);
  auto first = D(a);
  auto train = [&] { first.sum().backward(); };
  auto second = D(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:17: warning: forward call on DDP-wrapped 'D' before the backward of the forward at line [[@LINE-3]]: DDP broadcasts buffers
  train();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: note: the backward that fails is here
  // CHECK-MESSAGES: :[[@LINE-5]]:22: note: the backward runs inside the lambda here
}

// A std::function holding the lambda, called once per step: trains.
void stdFunctionOnce(Net net, PG pg, std::vector<torch::Tensor> batches) {
  DDP D(net, pg);
  std::function<torch::Tensor(const torch::Tensor &)> step =
      [&](const torch::Tensor &x) { return D(x).sum(); };
  for (const auto &b : batches)
    step(b).backward();
}

// ... and called twice before one backward: fails.
void stdFunctionTwice(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP D(net, pg);
  std::function<torch::Tensor(const torch::Tensor &)> embed =
      [&](const torch::Tensor &x) { return D(x).sum(); };
  auto loss = embed(a) + embed(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:26: warning: forward call on DDP-wrapped 'D' before the backward of the forward at line [[@LINE-1]]: DDP broadcasts buffers
  loss.backward();
}
