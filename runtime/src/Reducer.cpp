#include "Reducer.h"

#include <ATen/ATen.h>
#include <ATen/ScalarOps.h>
#include <c10/util/Exception.h>
#include <c10/util/irange.h>
#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/grad_mode.h>
#include <torch/csrc/autograd/utils/grad_layout_contract.h>
#include <torch/csrc/autograd/variable.h>

#include <algorithm>
#include <limits>
#include <map>
#include <sstream>

namespace ddpguard::detail {
namespace {

// dist._DEFAULT_FIRST_BUCKET_BYTES.
constexpr int64_t kFirstBucketBytes = 1024 * 1024;

// Calls back into the reducer after AccumulateGrad has written .grad.
class AccumulateGradHook : public torch::autograd::FunctionPostHook {
public:
  explicit AccumulateGradHook(std::function<void()> fn) : fn_(std::move(fn)) {}
  torch::autograd::variable_list
  operator()(const torch::autograd::variable_list &outputs,
             const torch::autograd::variable_list & /*inputs*/) override {
    fn_();
    return outputs;
  }

private:
  std::function<void()> fn_;
};

std::string what_of(std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const c10::Error &err) {
    return err.what_without_backtrace();
  } catch (const std::exception &err) {
    return err.what();
  } catch (...) {
    return "unknown error";
  }
}

// compute_bucket_assignment_by_size from reducer.cpp: consecutive tensors of
// one dtype/device fill a bucket until it reaches the current size limit; the
// limits are used in order per dtype (the last one repeats). Without an
// explicit order, buckets are sorted by their smallest index.
std::vector<std::vector<size_t>>
assign_buckets(const std::vector<at::Tensor> &tensors,
               const std::vector<size_t> &order,
               const std::vector<int64_t> &limits, bool sort_by_min_index) {
  struct Acc {
    std::vector<size_t> indices;
    int64_t size = 0;
    size_t limit = 0;
  };
  std::map<std::pair<int, int>, Acc> open; // (dtype, device) -> bucket
  std::vector<std::vector<size_t>> result;
  for (size_t i : order) {
    const auto &t = tensors[i];
    std::pair<int, int> key{static_cast<int>(t.scalar_type()),
                            static_cast<int>(t.device().type()) * 1000 +
                                t.device().index()};
    auto &acc = open[key];
    acc.indices.push_back(i);
    acc.size += t.numel() * static_cast<int64_t>(t.element_size());
    if (acc.size >= limits[acc.limit]) {
      size_t next_limit = std::min(acc.limit + 1, limits.size() - 1);
      result.push_back(std::move(acc.indices));
      acc = Acc{};
      acc.limit = next_limit;
    }
  }
  for (auto &[key, acc] : open)
    if (!acc.indices.empty())
      result.push_back(std::move(acc.indices));
  if (sort_by_min_index)
    std::sort(result.begin(), result.end(), [](const auto &a, const auto &b) {
      return *std::min_element(a.begin(), a.end()) <
             *std::min_element(b.begin(), b.end());
    });
  return result;
}

} // namespace

Reducer::Reducer(std::vector<at::Tensor> params, std::vector<std::string> names,
                 ProcessGroupPtr process_group, int64_t bucket_bytes_cap,
                 bool find_unused_parameters, std::function<void()> on_gradient)
    : params_(std::move(params)), names_(std::move(names)),
      process_group_(std::move(process_group)),
      find_unused_parameters_(find_unused_parameters),
      on_gradient_(std::move(on_gradient)),
      div_factor_(at::native::wrapped_scalar_tensor(
          1.0 / static_cast<double>(process_group_->getSize()))),
      comm_device_(params_.empty() ? at::Device(at::kCPU) : params_[0].device()),
      bucket_bytes_cap_(bucket_bytes_cap) {
  for (const auto &p : params_)
    TORCH_CHECK(!p.is_sparse(),
                "ddpguard::DistributedDataParallel: sparse parameters are not supported");
  // PyTorch 1.13 starts with a single bucket unless unused parameters are
  // searched for (the parameter order need not be the backward order), and
  // rebuilds buckets from the observed gradient order after the first
  // backward.
  std::vector<size_t> order(params_.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::vector<int64_t> limits =
      find_unused_parameters_
          ? std::vector<int64_t>{kFirstBucketBytes, bucket_bytes_cap_}
          : std::vector<int64_t>{std::numeric_limits<int64_t>::max()};
  auto assignment = assign_buckets(params_, order, limits, true);
  // Reversed: the last parameters' gradients are produced first.
  std::reverse(assignment.begin(), assignment.end());
  install_buckets(assignment);

  if (find_unused_parameters_) {
    local_used_map_ = at::zeros({static_cast<int64_t>(params_.size())},
                                at::TensorOptions().dtype(at::kInt));
    local_used_map_dev_ = local_used_map_.to(comm_device_);
  }

  for (size_t i = 0; i < params_.size(); ++i) {
    auto acc = torch::autograd::impl::grad_accumulator(params_[i]);
    TORCH_CHECK(acc, "ddpguard::DistributedDataParallel: parameter '",
                names_[i], "' has no gradient accumulator (not a leaf?)");
    hook_keys_.push_back(acc->add_post_hook(
        std::make_unique<AccumulateGradHook>([this, i] { autograd_hook(i); })));
    grad_accumulators_.push_back(std::move(acc));
  }
}

Reducer::~Reducer() {
  for (size_t i = 0; i < grad_accumulators_.size(); ++i)
    grad_accumulators_[i]->del_post_hook(hook_keys_[i]);
}

void Reducer::install_buckets(const std::vector<std::vector<size_t>> &assignment) {
  buckets_.clear();
  locators_.assign(params_.size(), Locator{0, 0});
  for (const auto &indices : assignment) {
    Bucket bucket;
    bucket.variables = indices;
    int64_t total = 0;
    for (size_t i : indices)
      total += params_[i].numel();
    const auto &first = params_[indices.front()];
    bucket.contents = at::empty({total}, first.options().requires_grad(false));
    int64_t offset = 0;
    for (size_t intra = 0; intra < indices.size(); ++intra) {
      const auto &p = params_[indices[intra]];
      bucket.views.push_back(
          bucket.contents.narrow(0, offset, p.numel()).view(p.sizes()));
      offset += p.numel();
      locators_[indices[intra]] = Locator{buckets_.size(), intra};
    }
    buckets_.push_back(std::move(bucket));
  }
  reset_bucket_counting();
}

void Reducer::reset_bucket_counting() {
  next_bucket_ = 0;
  for (auto &b : buckets_) {
    b.pending = b.variables.size();
    b.work.reset();
  }
}

void Reducer::ensure_prior_reduction_finished() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!require_finalize_)
    return;
  std::ostringstream unready;
  for (size_t i = 0; i < params_.size(); ++i)
    if (!ready_this_iteration_.count(i))
      unready << " " << names_[i];
  TORCH_CHECK(false,
              "ddpguard::DistributedDataParallel: expected to have finished "
              "reduction in the prior iteration before starting a new one. "
              "Some parameters received no gradient in that backward, so their "
              "buckets were never allreduced. Pass "
              "DDPOptions().find_unused_parameters(true) if the forward does not "
              "use every parameter, and make sure every output of the forward "
              "takes part in the loss. Parameters that got no gradient on rank ",
              process_group_->getRank(), ":", unready.str());
}

void Reducer::rebuild_buckets_if_needed() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (has_rebuilt_buckets_ || find_unused_parameters_ ||
      rebuilt_order_.size() != params_.size())
    return;
  has_rebuilt_buckets_ = true;
  // Every rank must use rank 0's order, or the bucket allreduces would pair
  // up different tensors (PyTorch's sync_bucket_indices).
  std::vector<int64_t> local(rebuilt_order_.begin(), rebuilt_order_.end());
  std::vector<at::Tensor> tensors{
      at::tensor(local, at::TensorOptions().dtype(at::kLong)).to(comm_device_)};
  process_group_->broadcast(tensors)->wait();
  auto order = tensors[0].cpu();
  std::vector<size_t> synced(rebuilt_order_.size());
  auto acc = order.accessor<int64_t, 1>();
  for (size_t i = 0; i < synced.size(); ++i)
    synced[i] = static_cast<size_t>(acc[i]);
  rebuilt_order_.clear();
  install_buckets(assign_buckets(params_, synced,
                                 {kFirstBucketBytes, bucket_bytes_cap_}, false));
}

void Reducer::prepare_for_backward(const std::vector<at::Tensor> &outputs) {
  std::lock_guard<std::mutex> lock(mutex_);
  expect_autograd_hooks_ = true;
  reset_bucket_counting();
  has_marked_unused_parameters_ = false;
  ready_this_iteration_.clear();
  if (!find_unused_parameters_)
    return;
  // Parameters whose AccumulateGrad node is unreachable from the outputs get
  // no gradient in this backward (search_unused_parameters in reducer.cpp).
  std::unordered_set<torch::autograd::Node *> seen;
  std::vector<torch::autograd::Node *> stack;
  for (const auto &out : outputs) {
    if (auto fn = out.grad_fn())
      if (seen.insert(fn.get()).second)
        stack.push_back(fn.get());
  }
  while (!stack.empty()) {
    auto *node = stack.back();
    stack.pop_back();
    for (const auto &edge : node->next_edges()) {
      if (auto *next = edge.function.get())
        if (seen.insert(next).second)
          stack.push_back(next);
    }
  }
  unused_parameters_.clear();
  for (size_t i = 0; i < params_.size(); ++i)
    if (!seen.count(grad_accumulators_[i].get()))
      unused_parameters_.push_back(i);
}

void Reducer::autograd_hook(size_t index) {
  on_gradient_();
  std::lock_guard<std::mutex> lock(mutex_);
  // Not armed: a backward under no_sync() (or without a synchronising
  // forward) only accumulates locally, like PyTorch.
  if (!expect_autograd_hooks_)
    return;
  if (find_unused_parameters_)
    local_used_map_.data_ptr<int>()[index] = 1;
  if (!has_marked_unused_parameters_) {
    has_marked_unused_parameters_ = true;
    for (size_t unused : unused_parameters_)
      mark_variable_ready(unused);
  }
  if (!has_rebuilt_buckets_ && !find_unused_parameters_)
    rebuilt_order_.push_back(index);
  mark_variable_ready(index);
}

void Reducer::mark_variable_ready(size_t index) {
  TORCH_CHECK(ready_this_iteration_.insert(index).second,
              "ddpguard::DistributedDataParallel: expected to mark a variable "
              "ready only once, but parameter '",
              names_[index],
              "' received a second gradient in this iteration (a reentrant "
              "backward, a parameter used outside forward, or a second "
              "backward through the same graph).");
  require_finalize_ = true;
  const auto loc = locators_[index];
  auto &bucket = buckets_[loc.bucket];
  auto &view = bucket.views[loc.intra];
  {
    at::NoGradGuard no_grad;
    const auto &grad = params_[index].grad();
    if (grad.defined()) {
      // Divide while copying, as PyTorch does (one pass over the gradient).
      at::mul_out(view, grad, div_factor_);
    } else {
      view.zero_();
    }
  }
  if (--bucket.pending == 0) {
    // Launch in bucket order so that every rank issues the same sequence
    // of collectives.
    while (next_bucket_ < buckets_.size() && buckets_[next_bucket_].pending == 0) {
      std::vector<at::Tensor> tensors{buckets_[next_bucket_].contents};
      buckets_[next_bucket_].work = process_group_->allreduce(tensors);
      ++next_bucket_;
    }
  }
  if (next_bucket_ == buckets_.size()) {
    if (find_unused_parameters_) {
      local_used_map_dev_.copy_(local_used_map_);
      std::vector<at::Tensor> tensors{local_used_map_dev_};
      local_used_work_ = process_group_->allreduce(tensors);
    }
    torch::autograd::Engine::get_default_engine().queue_callback([this] {
      std::lock_guard<std::mutex> lock(mutex_);
      finalize_backward();
    });
  }
}

void Reducer::fail(const std::string &what, std::exception_ptr cause) {
  expect_autograd_hooks_ = false;
  require_finalize_ = false;
  reset_bucket_counting();
  TORCH_CHECK(false, "ddpguard::DistributedDataParallel: ", what, " failed on rank ",
              process_group_->getRank(), " of ", process_group_->getSize(),
              ": ", what_of(cause),
              " (a peer process may have died, or stopped calling backward)");
}

void Reducer::finalize_backward() {
  expect_autograd_hooks_ = false;
  require_finalize_ = false;
  for (size_t b = 0; b < buckets_.size(); ++b) {
    try {
      buckets_[b].work->wait();
    } catch (...) {
      fail("gradient allreduce of bucket " + std::to_string(b),
           std::current_exception());
    }
  }
  at::Tensor global_used;
  if (find_unused_parameters_) {
    try {
      local_used_work_->wait();
    } catch (...) {
      fail("allreduce of the used-parameter map", std::current_exception());
    }
    global_used = local_used_map_dev_.cpu();
    local_used_map_.zero_();
  }
  at::NoGradGuard no_grad;
  for (auto &bucket : buckets_) {
    for (size_t intra = 0; intra < bucket.variables.size(); ++intra) {
      size_t index = bucket.variables[intra];
      // A parameter no rank used keeps its .grad untouched (PyTorch).
      if (global_used.defined() && global_used.data_ptr<int>()[index] == 0)
        continue;
      auto &param = params_[index];
      auto &grad = param.mutable_grad();
      if (!grad.defined())
        grad = torch::autograd::utils::clone_obey_contract(bucket.views[intra],
                                                           param);
      else
        grad.copy_(bucket.views[intra]);
    }
  }
  reset_bucket_counting();
}

} // namespace ddpguard::detail
