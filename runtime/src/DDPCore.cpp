#include <ddpguard/runtime/DistributedDataParallel.h>

#include "HazardDetector.h"
#include "NodePtr.h"
#include "Verifier.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/grad_mode.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/csrc/distributed/c10d/comm.hpp>
#include <torch/csrc/distributed/c10d/logger.hpp>
#include <torch/csrc/distributed/c10d/reducer.hpp>

#include <algorithm>
#include <functional>
#include <sstream>
#include <unordered_map>

namespace ddpguard::detail {
namespace {

// DDP's broadcast_bucket_size (250 MiB) for parameter and buffer broadcasts.
constexpr size_t kBroadcastBucketBytes = 250 * 1024 * 1024;
// DDP's _DEFAULT_FIRST_BUCKET_BYTES.
constexpr int64_t kFirstBucketBytes = 1024 * 1024;

std::string describe(const at::Tensor &t) {
  std::ostringstream os;
  os << t.sizes() << " " << t.scalar_type();
  return os.str();
}

std::vector<int64_t> allgather_longs(const ProcessGroupPtr &pg,
                                     std::vector<int64_t> local, size_t length,
                                     at::Device device) {
  local.resize(length, -1);
  auto input = at::tensor(local, at::TensorOptions().dtype(at::kLong)).to(device);
  std::vector<at::Tensor> inputs{input};
  std::vector<std::vector<at::Tensor>> outputs(1);
  for (int r = 0; r < pg->getSize(); ++r)
    outputs[0].push_back(at::empty_like(input));
  pg->allgather(outputs, inputs)->wait();
  std::vector<int64_t> all;
  for (const auto &t : outputs[0]) {
    auto host = t.cpu();
    auto acc = host.accessor<int64_t, 1>();
    for (int64_t i = 0; i < acc.size(0); ++i)
      all.push_back(acc[i]);
  }
  return all;
}

// Every rank must hold the same parameters and buffers, in number, order,
// shape and dtype. c10d::verify_params_across_processes checks parameters
// only and names them by index; this check also covers buffers (a mismatch
// there would shift one rank's bytes into another's buffer in the broadcast)
// and names the tensor. All ranks see the same gathered metadata, so all of
// them fail with the same message instead of hanging in mismatched
// collectives later.
void verify_model_across_processes(const ProcessGroupPtr &pg,
                                   const std::vector<at::Tensor> &tensors,
                                   const std::vector<std::string> &names,
                                   at::Device device) {
  const int world = pg->getSize();
  std::vector<int64_t> meta;
  for (const auto &t : tensors) {
    meta.push_back(static_cast<int64_t>(t.scalar_type()));
    meta.push_back(t.dim());
    for (auto s : t.sizes())
      meta.push_back(s);
  }
  auto counts = allgather_longs(
      pg, {static_cast<int64_t>(tensors.size()), static_cast<int64_t>(meta.size())},
      2, device);
  int64_t longest = 0;
  for (int r = 0; r < world; ++r) {
    if (counts[2 * r] != counts[0])
      TORCH_CHECK(false,
                  "ddpguard::DistributedDataParallel: the model differs across "
                  "ranks: rank 0 has ",
                  counts[0], " parameters and buffers, rank ", r, " has ",
                  counts[2 * r]);
    longest = std::max(longest, counts[2 * r + 1]);
  }
  auto all = allgather_longs(pg, meta, static_cast<size_t>(longest), device);
  auto read = [](const int64_t *m, size_t at) {
    std::ostringstream os;
    os << "[";
    for (int64_t d = 0; d < m[at + 1]; ++d)
      os << (d ? ", " : "") << m[at + 2 + d];
    os << "] " << c10::toString(static_cast<c10::ScalarType>(m[at]));
    return os.str();
  };
  for (int r = 1; r < world; ++r) {
    const int64_t *ref = all.data();
    const int64_t *other = all.data() + r * longest;
    size_t pos = 0;
    for (size_t i = 0; i < tensors.size(); ++i) {
      const std::string a = read(ref, pos), b = read(other, pos);
      if (a != b)
        TORCH_CHECK(false,
                    "ddpguard::DistributedDataParallel: the model differs "
                    "across ranks: '",
                    names[i], "' is ", a, " on rank 0 but ", b, " on rank ", r);
      pos += 2 + static_cast<size_t>(ref[pos + 1]);
    }
  }
}

// Adds ddpguard's context to a failed collective: which one, on what, and
// the usual causes, since c10d's own message names none of them.
// Where a collective ran, by value: a callback that held the group itself
// could drop its last reference on one of the group's own worker threads,
// whose destructor would then join itself.
struct GroupInfo {
  int rank;
  int size;
  std::string backend;
  explicit GroupInfo(const ProcessGroupPtr &pg)
      : rank(pg->getRank()), size(pg->getSize()), backend(pg->getBackendName()) {}
};

[[noreturn]] void rethrow_collective_error(const std::string &what,
                                           const GroupInfo &group) {
  std::string cause;
  try {
    throw;
  } catch (const c10::Error &e) {
    cause = e.what_without_backtrace();
  } catch (const std::exception &e) {
    cause = e.what();
  }
  throw std::runtime_error(
      "ddpguard::DistributedDataParallel: " + what + " failed on rank " +
      std::to_string(group.rank) + " of " + std::to_string(group.size) +
      " (" + group.backend + "): " + cause +
      "\n  likely causes: a rank died or exited early, a rank hangs in other "
      "work (the collective timed out), or the ranks were started with "
      "different world sizes or models");
}

#if DDPGUARD_BUFFER_SYNC_PRESERVES_VERSIONS
// torch.autograd._unsafe_preserve_version_counter: each tensor's version
// counter is set back to its value at construction when the guard ends (also
// when the broadcast throws, as Python's context manager does).
class PreservedVersions {
public:
  explicit PreservedVersions(const std::vector<at::Tensor> &tensors) {
    for (const auto &t : tensors) {
      c10::VariableVersion counter = t.unsafeGetTensorImpl()->version_counter();
      if (!counter.enabled())
        continue;
      const uint32_t version = counter.current_version();
      saved_.emplace_back(std::move(counter), version);
    }
  }
  ~PreservedVersions() {
    for (auto &[counter, version] : saved_)
      counter.set_version(version);
  }
  PreservedVersions(const PreservedVersions &) = delete;
  PreservedVersions &operator=(const PreservedVersions &) = delete;

private:
  std::vector<std::pair<c10::VariableVersion, uint32_t>> saved_;
};
#endif

} // namespace

// c10d's built-in ALLREDUCE hook (divide by the world size, then allreduce
// the bucket), plus ddpguard's context when the allreduce fails: which bucket,
// which parameters, the likely cause. c10d's own error is a bare transport
// message ("Connection closed by peer") raised from inside backward().
// Dividing here rather than in the reducer's copy costs one pass over the
// bucket; the result is bit-identical (each gradient divided, then summed).
class ContextualAllReduceHook
    : public c10d::CppCommHookInterface<ProcessGroupPtr> {
public:
  ContextualAllReduceHook(ProcessGroupPtr pg,
                          std::unordered_map<const void *, std::string> names)
      : CppCommHookInterface(std::move(pg)), names_(std::move(names)) {}

  c10::intrusive_ptr<c10::ivalue::Future>
  runHook(c10d::GradBucket &bucket) override {
    auto &tensor = bucket.getBufferRef();
    tensor.div_(state_->getSize());
    std::vector<at::Tensor> tensors{tensor};
    auto future = state_->allreduce(tensors)->getFuture();
    std::string what = "the gradient allreduce of bucket " +
                       std::to_string(bucket.getIndex()) + " (";
    size_t shown = 0;
    for (const auto &p : bucket.getParameters()) {
      if (shown++ == 4) {
        what += ", ...";
        break;
      }
      auto it = names_.find(p.unsafeGetTensorImpl());
      what += (shown > 1 ? ", " : "") +
              (it == names_.end() ? std::string("?") : it->second);
    }
    what += ")";
    return future->then(
        [what = std::move(what), group = GroupInfo(state_)](
            c10::ivalue::Future &done) {
          if (done.hasError()) {
            try {
              std::rethrow_exception(done.exception_ptr());
            } catch (...) {
              rethrow_collective_error(what, group);
            }
          }
          return done.value();
        },
        future->elementType());
  }

private:
  std::unordered_map<const void *, std::string> names_;
};

// Runs `on_gradient` whenever a backward accumulates a gradient into one of
// the parameters (synchronised or not), from post-hooks on their
// AccumulateGrad nodes next to c10d::Reducer's own. The once-per-backward
// policy and the hazard detector use it to see backwards; with static_graph
// it also queues the first iteration's delayed allreduce, as Python DDP's
// _DDPSink does.
class BackwardObserver {
public:
  BackwardObserver(const std::vector<at::Tensor> &params,
                   std::function<void()> on_gradient,
                   std::function<void()> end_of_first_backward)
      : state_(std::make_shared<State>()) {
    state_->on_gradient = std::move(on_gradient);
    state_->end_of_first_backward = std::move(end_of_first_backward);
    for (const auto &p : params) {
      auto acc = torch::autograd::impl::grad_accumulator(p);
      TORCH_CHECK(acc, "ddpguard::DistributedDataParallel: a parameter has no "
                       "gradient accumulator (not a leaf?)");
      keys_.push_back(acc->add_post_hook(std::make_unique<Hook>(state_)));
      accumulators_.push_back(std::move(acc));
    }
  }
  ~BackwardObserver() {
    for (size_t i = 0; i < accumulators_.size(); ++i)
      accumulators_[i]->del_post_hook(keys_[i]);
  }
  BackwardObserver(const BackwardObserver &) = delete;
  BackwardObserver &operator=(const BackwardObserver &) = delete;

private:
  struct State {
    std::function<void()> on_gradient;
    std::function<void()> end_of_first_backward;
    std::atomic<bool> first_backward_queued{false};
  };
  class Hook : public torch::autograd::FunctionPostHook {
  public:
    explicit Hook(std::shared_ptr<State> state) : state_(std::move(state)) {}
    torch::autograd::variable_list
    operator()(const torch::autograd::variable_list &outputs,
               const torch::autograd::variable_list &) override {
      state_->on_gradient();
      if (state_->end_of_first_backward &&
          !state_->first_backward_queued.exchange(true))
        torch::autograd::Engine::get_default_engine().queue_callback(
            state_->end_of_first_backward);
      return outputs;
    }

  private:
    std::shared_ptr<State> state_;
  };

  std::shared_ptr<State> state_;
  std::vector<NodePtr> accumulators_;
  std::vector<uintptr_t> keys_;
};

DDPCore::DDPCore(torch::nn::Module &module, ProcessGroupPtr process_group,
                 DDPOptions options)
    : module_(module), process_group_(std::move(process_group)),
      options_(std::move(options)),
      grad_forward_since_backward_(std::make_shared<std::atomic<bool>>(false)) {
  TORCH_CHECK(process_group_, "ddpguard::DistributedDataParallel: null process group");
  TORCH_CHECK(options_.bucket_cap_mb() > 0,
              "ddpguard::DistributedDataParallel: bucket_cap_mb must be positive");
#if DDPGUARD_HAS_FORWARD_SYNC_BUFFERS
  // PyTorch 2.13's FutureWarnings, in C++ spelling.
  if (options_.broadcast_buffers().has_value()) {
    if (options_.forward_sync_buffers().has_value()) {
      TORCH_WARN_DEPRECATION(
          "ddpguard::DistributedDataParallel: both broadcast_buffers and "
          "forward_sync_buffers were set. broadcast_buffers is deprecated and "
          "its value is ignored when forward_sync_buffers is set.");
    } else {
      TORCH_WARN_DEPRECATION(
          "ddpguard::DistributedDataParallel: broadcast_buffers is deprecated. "
          "Use forward_sync_buffers instead. Unlike broadcast_buffers(false), "
          "forward_sync_buffers(false) still syncs buffers at construction.");
    }
  }
#endif
  std::vector<at::Tensor> params;
  std::unordered_map<size_t, std::string> param_names;
  std::vector<at::Tensor> states;
  std::vector<std::string> state_names;
  for (const auto &item : module_.named_parameters(/*recurse=*/true)) {
    states.push_back(item.value().detach());
    state_names.push_back(item.key());
    if (item.value().requires_grad()) {
      param_names[params.size()] = item.key();
      param_names_.push_back(item.key());
      params.push_back(item.value());
    }
  }
  // Every rank must agree on the buffers too; whether the construction
  // broadcasts them is PyTorch's init_sync_buffers.
  std::vector<at::Tensor> checked = states;
  std::vector<std::string> checked_names = state_names;
  for (const auto &item : module_.named_buffers(/*recurse=*/true)) {
    checked.push_back(item.value().detach());
    checked_names.push_back(item.key());
    if (init_sync_buffers(options_)) {
      states.push_back(item.value().detach());
      state_names.push_back(item.key());
    }
  }
  TORCH_CHECK(!params.empty(), "ddpguard::DistributedDataParallel: the module "
                               "has no parameter that requires grad");

  if (options_.init_sync()) {
    // Collectives run where the parameters live (NCCL needs CUDA tensors).
    try {
      verify_model_across_processes(process_group_, checked, checked_names,
                                    params[0].device());
      at::NoGradGuard no_grad;
      c10d::broadcast_coalesced(process_group_, states, kBroadcastBucketBytes, 0);
    } catch (const c10::Error &e) {
      if (std::string(e.what()).find("the model differs across ranks") !=
          std::string::npos)
        throw;
      rethrow_collective_error(
          "broadcasting rank 0's parameters and buffers at construction",
          GroupInfo(process_group_));
    } catch (const std::exception &) {
      rethrow_collective_error(
          "broadcasting rank 0's parameters and buffers at construction",
          GroupInfo(process_group_));
    }
  }

  // Verification mode stops at a hazard with the detector's report.
  if (verify_enabled()) {
    options_.hazard_detector(HazardAction::kThrow);
    verifier_ = std::make_unique<Verifier>(module_, process_group_, options_);
  }

  // The detector watches every grad-mode forward, whether or not buffers are
  // broadcast: an optimizer step or an in-place op between a forward and its
  // backward fails the backward on every LibTorch version. The explainer
  // names the writes of tensors that are not this module's.
  if (options_.hazard_detector() != HazardAction::kSilent) {
    explain_inplace_errors(process_group_->getRank());
    std::vector<WatchedTensor> watched;
    for (const auto &item : module_.named_parameters(/*recurse=*/true))
      watched.push_back({item.key(), item.value(), /*buffer=*/false});
    for (const auto &item : module_.named_buffers(/*recurse=*/true))
      watched.push_back({item.key(), item.value(), /*buffer=*/true});
    detector_ = std::make_unique<HazardDetector>(
        options_.hazard_detector(), options_.silent_writes(),
        process_group_->getRank(), std::move(watched),
        [module = std::weak_ptr<torch::nn::Module>(module_.shared_from_this())] {
          std::vector<at::Tensor> buffers;
          if (auto m = module.lock())
            buffers = m->buffers(/*recurse=*/true);
          return buffers;
        });
  }

  // PyTorch's bucketing: a small first bucket (1 MiB) so the first gradients
  // start their allreduce early, then bucket_cap_mb; reversed, because
  // gradients arrive roughly in reverse order of definition.
  const auto cap = static_cast<int64_t>(options_.bucket_cap_mb() * 1024 * 1024);
  const std::vector<bool> sparse(params.size(), false);
  auto [bucket_indices, limits] = c10d::compute_bucket_assignment_by_size(
      params, {static_cast<size_t>(kFirstBucketBytes), static_cast<size_t>(cap)},
      sparse);
  std::reverse(bucket_indices.begin(), bucket_indices.end());
  std::vector<int64_t> limit_list(limits.rbegin(), limits.rend());
  reducer_ = std::make_shared<c10d::Reducer>(
      params, std::move(bucket_indices), process_group_, sparse, cap,
      options_.find_unused_parameters(), options_.gradient_as_bucket_view(),
      param_names, kFirstBucketBytes,
      /*skip_all_reduce_unused_params=*/false, /*use_python_reducer=*/false,
      std::move(limit_list)
#if DDPGUARD_HAS_BATCHED_GRAD_COPY
          ,
      options_.batched_grad_copy()
#endif
#if DDPGUARD_HAS_LAZY_BUCKET_ALLOCATION
          ,
      options_.lazy_bucket_allocation()
#endif
  );
  // c10d::Reducer dereferences its logger when the set of unused parameters
  // changes between iterations; Python's DDP always gives it one.
  logger_ = std::make_shared<c10d::Logger>(reducer_);
  reducer_->set_logger(logger_);
  std::unordered_map<const void *, std::string> names_by_tensor;
  for (const auto &[index, name] : param_names)
    names_by_tensor[params[index].unsafeGetTensorImpl()] = name;
  reducer_->register_comm_hook(std::make_unique<ContextualAllReduceHook>(
      process_group_, std::move(names_by_tensor)));
  std::function<void()> end_of_first_backward;
  if (options_.static_graph()) {
    reducer_->set_static_graph();
    end_of_first_backward = [reducer = reducer_.get()] {
      reducer->delay_all_reduce();
    };
  }
  backward_observer_ = std::make_unique<BackwardObserver>(
      params,
      [flag = grad_forward_since_backward_, verifier = verifier_.get()] {
        flag->store(false);
        if (verifier)
          verifier->on_gradient();
      },
      std::move(end_of_first_backward));
}

DDPCore::~DDPCore() {
  if (verifier_)
    verifier_->finish();
}

namespace {

// c10d::Reducer's errors speak Python ("find_unused_parameters=True") and
// name parameters by index unless TORCH_DISTRIBUTED_DEBUG is set; add their
// names and the C++ spelling of the remedies.
template <typename F>
void with_cpp_hints(const std::vector<std::string> &param_names,
                    F &&reducer_call) {
  try {
    reducer_call();
  } catch (const c10::Error &e) {
    std::string what = e.what_without_backtrace();
    const std::string marker = "did not receive grad for rank ";
    if (auto at = what.find(marker); at != std::string::npos) {
      std::istringstream indices(
          what.substr(what.find(':', at) + 1,
                      what.find('\n', at) - what.find(':', at) - 1));
      std::string names;
      for (size_t index; indices >> index;)
        if (index < param_names.size())
          names += (names.empty() ? "" : ", ") + param_names[index];
      what += "\n(ddpguard: the parameters without a gradient: " + names + ")";
    }
    if (what.find("find_unused_parameters") != std::string::npos)
      what += "\n(ddpguard: in C++ that is "
              "ddpguard::DDPOptions().find_unused_parameters(true); "
              "static_graph(true) if the unused set never changes)";
    throw std::runtime_error("ddpguard::DistributedDataParallel: " + what);
  }
}

} // namespace

void DDPCore::pre_forward(const CallSite &site) {
  forward_grad_mode_ = at::GradMode::is_enabled();
  with_cpp_hints(param_names_, [&] {
    if (forward_grad_mode_ && require_backward_grad_sync_)
      reducer_->prepare_for_forward();
    if (forward_grad_mode_)
      reducer_->rebuild_buckets();
  });
  // PyTorch's will_sync_module_buffers(): the previous forward (or the
  // construction) asked for it and forward_sync_buffers is on.
  bool sync = require_forward_param_sync_ && forward_sync_buffers(options_);
  if (sync && options_.buffer_broadcast() == BufferBroadcast::kOncePerBackward &&
      grad_forward_since_backward_->load())
    sync = false;
  last_forward_broadcast_ = false;
  if (sync)
    sync_buffers(site);
  if (verifier_)
    verifier_->on_forward(last_forward_broadcast_);
}

void DDPCore::sync_buffers(const CallSite &site) {
  // Re-read the buffers each time, as PyTorch does, in case a module
  // re-registered one.
  auto named = module_.named_buffers(/*recurse=*/true);
  if (named.is_empty())
    return;
  std::vector<at::Tensor> buffers;
  buffers.reserve(named.size());
  for (const auto &item : named)
    buffers.push_back(item.value().detach());
  // From 2.12.1 the broadcast preserves the version counters (below), so it
  // cannot fail a backward.
  if (detector_ && !DDPGUARD_BUFFER_SYNC_PRESERVES_VERSIONS)
    detector_->on_broadcast(site, named.keys(), named.values());
  at::NoGradGuard no_grad;
  // PyTorch's own call: copies the broadcast result back with an in-place
  // copy_, which bumps each buffer's version counter. From 2.12.1 Python DDP
  // puts the counters back (_unsafe_preserve_version_counter), and so do we.
  try {
#if DDPGUARD_BUFFER_SYNC_PRESERVES_VERSIONS
    PreservedVersions preserved(buffers);
#endif
    c10d::broadcast_coalesced(process_group_, buffers, kBroadcastBucketBytes, 0);
  } catch (const std::exception &) {
    std::string names;
    for (const auto &key : named.keys())
      names += (names.empty() ? "" : ", ") + key;
    rethrow_collective_error("broadcasting buffers (" + names +
                                 ") from rank 0 before the forward at " +
                                 site.file + ":" + std::to_string(site.line),
                             GroupInfo(process_group_));
  }
  last_forward_broadcast_ = true;
}

void DDPCore::post_forward(const std::vector<at::Tensor> &outputs,
                           const CallSite &site) {
  if (forward_grad_mode_ && require_backward_grad_sync_) {
    require_forward_param_sync_ = true;
    if (verifier_)
      verifier_->on_synced_forward();
    with_cpp_hints(param_names_, [&] {
      reducer_->prepare_for_backward(
          options_.find_unused_parameters() && !options_.static_graph()
              ? outputs
              : std::vector<at::Tensor>{});
    });
  } else {
    require_forward_param_sync_ = false;
  }
  if (forward_grad_mode_) {
    grad_forward_since_backward_->store(true);
    if (detector_)
      detector_->on_grad_forward(outputs, site);
  }
}

[[noreturn]] void rethrow_group_error(size_t index,
                                      const std::vector<at::Tensor> &inputs) {
  std::ostringstream shapes;
  for (size_t i = 0; i < inputs.size(); ++i)
    shapes << (i ? ", " : "") << describe(inputs[i]);
  const std::string prefix =
      "ddpguard::DistributedDataParallel::forward_group: inner forward #" +
      std::to_string(index) + " (inputs: " + shapes.str() + ") failed: ";
  try {
    throw;
  } catch (const c10::Error &e) {
    throw std::runtime_error(prefix + e.what_without_backtrace());
  } catch (const std::exception &e) {
    throw std::runtime_error(prefix + e.what());
  }
}

} // namespace ddpguard::detail
