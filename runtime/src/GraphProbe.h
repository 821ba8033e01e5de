// What the runtime's two reporters share: the hazard detector (a backward
// about to run a recorded DDP forward's graph) and the in-place error
// explainer (any backward autograd rejected). Both find the stale saved
// tensor by asking autograd itself, through compiled autograd's visitor.
#pragma once

#include "NodePtr.h"

#include <ATen/core/Tensor.h>
#include <c10/core/TensorImpl.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace ddpguard::detail {

// One node of the graph, unpacked by compiled autograd's visitor: every saved
// variable goes through SavedVariable::unpack, which applies autograd's
// version check exactly as the node's own backward would.
enum class Probe { kClean, kStale, kFreed, kUninspectable };
struct ProbeResult {
  Probe kind = Probe::kClean;
  std::string message;
  std::vector<at::Tensor> unpacked; // the node's tensors, up to a failure
};
ProbeResult probe(const NodePtr &node);

// Visits every node reachable from `roots` once, depth first; `visit`
// returns whether to go on to the node's next functions.
void walk_graph(std::vector<NodePtr> roots,
                const std::function<bool(const NodePtr &)> &visit);

uint32_t version_of(const at::Tensor &t);

// Whether `saved` (a tensor a node unpacked) shares `tensor`'s storage.
bool aliases(const at::Tensor &saved, const at::Tensor &tensor);

// Puts tensors' version counters back to earlier values for the lifetime of
// the guard (one re-probe of one node, on the backward's thread), then
// restores them.
class VersionRollback {
public:
  VersionRollback() = default;
  ~VersionRollback();
  VersionRollback(const VersionRollback &) = delete;
  VersionRollback &operator=(const VersionRollback &) = delete;

  void roll_back(const at::Tensor &tensor, uint32_t version);

private:
  std::vector<std::pair<c10::VariableVersion, uint32_t>> restore_;
};

// Autograd's own description of the stale tensor: "[torch.FloatTensor [6, 8]],
// which is output 0 of SigmoidBackward0, is at version 1; expected version 0".
std::string stale_tensor_description(const std::string &message);

// The first frame of the backward's caller outside PyTorch, the C++ runtime
// and this library (function name and binary; no line numbers without debug
// information). Only computed for a report.
std::string caller_frame();

// The fixes both reports of a write (not a broadcast) end with.
extern const char *const kWriteFixes;

// Every report printed or thrown goes through here (latest_hazard_report());
// the count lets the explainer stay silent on a backward the detector has
// already reported.
void remember_report(const std::string &report);
uint64_t reports_so_far();

} // namespace ddpguard::detail
