// Gradient reduction modelled on c10d::Reducer (reducer.cpp), which Debian's
// headers do not let us use: gradients are copied (pre-divided by the world
// size) into flat per-dtype buckets from AccumulateGrad post-hooks, each bucket
// is allreduced asynchronously as soon as it is full and all buckets before it
// were launched, and a callback queued on the autograd engine waits for the
// buckets at the end of the backward and writes the averages to .grad.
#pragma once

#include <ddpguard/runtime/ProcessGroup.h>

#include <ATen/core/Tensor.h>
#include <torch/csrc/autograd/function.h>

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

namespace ddpguard::detail {

class Reducer {
public:
  // `params` are the parameters that require grad, `names` their module
  // paths. `on_gradient` runs whenever any parameter's gradient is
  // accumulated, synchronised or not (the once-per-backward policy and the
  // detector use it to see backwards).
  Reducer(std::vector<at::Tensor> params, std::vector<std::string> names,
          ProcessGroupPtr process_group, int64_t bucket_bytes_cap,
          bool find_unused_parameters, std::function<void()> on_gradient);
  ~Reducer();
  Reducer(const Reducer &) = delete;
  Reducer &operator=(const Reducer &) = delete;

  // PyTorch's ensure_prior_reduction_finished: a backward that marked some
  // but not all gradients ready leaves the reduction unfinished.
  void ensure_prior_reduction_finished();
  // Arms the hooks for the next backward; with find_unused_parameters,
  // parameters unreachable from `outputs` are marked ready with zeros.
  void prepare_for_backward(const std::vector<at::Tensor> &outputs);
  // After the first synchronised backward, re-buckets parameters in the
  // order their gradients arrived (rank 0's order, broadcast), with the
  // [1 MiB, bucket_cap] limits, as PyTorch's _rebuild_buckets does.
  void rebuild_buckets_if_needed();

private:
  struct Bucket {
    std::vector<size_t> variables; // indices into params_
    at::Tensor contents;           // flat, one dtype
    std::vector<at::Tensor> views; // per variable, shaped like the param
    size_t pending = 0;
    c10::intrusive_ptr<c10d::Work> work;
  };
  struct Locator {
    size_t bucket;
    size_t intra;
  };

  void install_buckets(const std::vector<std::vector<size_t>> &assignment);
  void autograd_hook(size_t index);
  void mark_variable_ready(size_t index);
  void finalize_backward();
  void reset_bucket_counting();
  [[noreturn]] void fail(const std::string &what, std::exception_ptr cause);

  std::vector<at::Tensor> params_;
  std::vector<std::string> names_;
  ProcessGroupPtr process_group_;
  bool find_unused_parameters_;
  std::function<void()> on_gradient_;
  at::Tensor div_factor_; // 1 / world size, a wrapped scalar like PyTorch's
  int64_t bucket_bytes_cap_;
  // Where collectives' tensors live (the parameters' device: NCCL needs CUDA).
  at::Device comm_device_;

  std::vector<Bucket> buckets_;
  std::vector<Locator> locators_;
  std::vector<std::shared_ptr<torch::autograd::Node>> grad_accumulators_;
  std::vector<uintptr_t> hook_keys_;

  std::mutex mutex_;
  bool expect_autograd_hooks_ = false;
  bool require_finalize_ = false;
  bool has_marked_unused_parameters_ = false;
  size_t next_bucket_ = 0;
  std::vector<size_t> unused_parameters_;
  std::unordered_set<size_t> ready_this_iteration_;
  bool has_rebuilt_buckets_ = false;
  std::vector<size_t> rebuilt_order_; // gradient arrival order, 1st backward
  at::Tensor local_used_map_; // int32 per parameter, 1 if used locally (host)
  at::Tensor local_used_map_dev_; // its copy on comm_device_, allreduced
  c10::intrusive_ptr<c10d::Work> local_used_work_;
};

} // namespace ddpguard::detail
