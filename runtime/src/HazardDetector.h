// Reports a backward that autograd is about to reject with its in-place
// error ("one of the variables needed for gradient computation has been
// modified by an inplace operation") because a tensor that a forward of this
// DDP saved for backward was written after that forward: by a buffer
// broadcast of a later forward ("several forwards before one backward"), an
// optimizer step, or any in-place op on a parameter or buffer.
//
// A grad-mode forward is recorded with the autograd nodes of its outputs
// (weakly), each with a pre-hook, and with the version counters of the
// module's parameters and buffers at its end (integer reads). When a later
// forward broadcasts buffers, every record whose graph is still alive notes
// the broadcast buffers with their versions before the broadcast. Records live
// as long as their graphs (a graph kept by retain_graph or create_graph can be
// traversed again after a backward). The hook runs only if a backward (or
// autograd::grad) is about to run that output node, and does nothing unless a
// broadcast followed the forward or a parameter's or buffer's version moved
// since it. It then inspects the graph the engine is about to execute: every
// node reachable from the output node that the backward will run has its
// saved variables unpacked by compiled autograd's visitor
// (Node::compiled_args), which applies autograd's own version check. Each
// node that fails it is reported: as a broadcast hazard when it passes once
// the broadcast buffers' version counters are put back to their values before
// the broadcast, otherwise as a write, naming the parameters and buffers that
// pass once put back to their versions at the forward's end, or, failing
// that, with autograd's own description of the tensor. A node that cannot be
// inspected is reported, naming it.
//
// With silent_writes, each record also keeps a fingerprint of every watched
// tensor (its storage and 16 of its elements), and the hook inspects when
// one changed while its version did not: a write autograd cannot see (LibTorch's
// SGD writes through .data()). The nodes that will run and saved such a tensor
// are reported as a silent write, never thrown: autograd accepts the backward.
//
// A backward with create_graph through a recorded graph builds a gradient
// graph whose nodes can save the same buffers (BatchNorm's double backward
// saves the running statistics). The output-node hook sees such a backward
// and puts a post-hook on the nodes that saved module buffers; their new
// gradient nodes are recorded like a forward's outputs.
#pragma once

#include <ddpguard/runtime/DistributedDataParallel.h>

#include <torch/csrc/autograd/function.h>

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace ddpguard::detail {

// A parameter or buffer of the wrapped module, by its path in the module tree.
struct WatchedTensor {
  std::string name;
  at::Tensor tensor;
  bool buffer = false;
};

class HazardDetector {
public:
  // `watched`: the module's parameters and buffers, whose versions each
  // recorded forward notes. `buffers` returns the module's buffers (only
  // called when a create_graph backward traverses a recorded graph).
  HazardDetector(HazardAction action, bool silent_writes, int rank,
                 std::vector<WatchedTensor> watched,
                 std::function<std::vector<at::Tensor>()> buffers);

  void on_grad_forward(const std::vector<at::Tensor> &outputs,
                       const CallSite &site);
  // Called before the broadcast overwrites `buffers` (the module's own
  // tensors, named by `names`).
  void on_broadcast(const CallSite &site, const std::vector<std::string> &names,
                    const std::vector<at::Tensor> &buffers);

  struct Shared; // outlives the detector while hooks of live graphs use it

private:
  std::shared_ptr<Shared> shared_;
};

} // namespace ddpguard::detail
