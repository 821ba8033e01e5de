// Reports "several forwards before one backward" before autograd fails.
//
// A grad-mode forward is recorded with the autograd nodes of its outputs
// (weakly). When a later forward broadcasts buffers, every recorded forward
// whose graph is still alive gets a pre-hook on its output nodes. The hook runs
// only if a backward (or autograd::grad) actually traverses that graph, right
// before the node whose saved buffers fail the version check, so it fires on
// exactly the error rows of the ground-truth table (docs/ground-truth.md) and never on the ok rows.
#pragma once

#include <ddpguard/runtime/DistributedDataParallel.h>

#include <torch/csrc/autograd/function.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace ddpguard::detail {

class HazardDetector {
public:
  HazardDetector(HazardAction action, int rank);

  void on_grad_forward(const std::vector<at::Tensor> &outputs,
                       const CallSite &site);
  void on_broadcast(const CallSite &site, std::vector<std::string> buffers);
  // A backward reached the parameters: earlier graphs were consumed.
  void on_backward();

  struct Hazard;

private:
  struct Record {
    CallSite site;
    std::vector<std::weak_ptr<torch::autograd::Node>> roots;
    std::shared_ptr<Hazard> hazard; // set once a broadcast clobbered it
  };

  HazardAction action_;
  int rank_;
  std::mutex mutex_;
  std::vector<Record> records_;
};

} // namespace ddpguard::detail
