// DistributedDataParallel for LibTorch with the semantics of PyTorch's
// torch.nn.parallel.DistributedDataParallel of the LibTorch version it is
// built against (2.11.0 to 2.15.0; TorchVersion.h), built on PyTorch's own
// c10d::Reducer and c10d::broadcast_coalesced, plus forward_group, an
// optional once-per-backward buffer broadcast policy and a hazard detector for
// "several forwards before one backward". See docs/runtime.md.
#pragma once

#include <ddpguard/runtime/ProcessGroup.h>
#include <ddpguard/runtime/TorchVersion.h>

#include <ATen/core/Tensor.h>
#include <torch/arg.h>
#include <torch/nn/module.h>

#include <atomic>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace c10d {
class Reducer;
class Logger;
} // namespace c10d

namespace ddpguard {

// When buffers are broadcast from rank 0 (if forward_sync_buffers, before
// 2.13 broadcast_buffers, is on).
enum class BufferBroadcast {
  // PyTorch's behaviour: before every forward that follows a grad-mode,
  // gradient-synchronising forward (or the first forward).
  kEveryForward,
  // As kEveryForward, but skipped while a grad-mode forward has run since the
  // last backward reached this module's parameters: the first forward after a
  // backward broadcasts, later ones reuse the buffers their graphs saved.
  kOncePerBackward,
};

// What the hazard detector does when a backward is about to traverse the graph
// of a forward whose saved buffers a later forward's broadcast overwrote.
enum class HazardAction { kSilent, kWarn, kThrow };

struct DDPOptions {
#if DDPGUARD_HAS_FORWARD_SYNC_BUFFERS
  // PyTorch 2.13's forward_sync_buffers: broadcast module buffers from rank 0
  // before forwards; unset means on. Buffers are synced at construction
  // (init_sync) whatever it says.
  TORCH_ARG(std::optional<bool>, forward_sync_buffers) = std::nullopt;
  // Deprecated since 2.13, kept as PyTorch keeps it (and warns, once per
  // construction, as PyTorch's FutureWarning does): used when
  // forward_sync_buffers is unset, and then false also leaves buffers out of
  // the construction's sync. Ignored when forward_sync_buffers is set.
  TORCH_ARG(std::optional<bool>, broadcast_buffers) = std::nullopt;
#else
  // Broadcast module buffers from rank 0 before forwards (PyTorch default);
  // false also leaves them out of the construction's sync, as in PyTorch.
  TORCH_ARG(bool, broadcast_buffers) = true;
#endif
  // Search each forward's output graph for parameters that get no gradient.
  TORCH_ARG(bool, find_unused_parameters) = false;
  // Gradient bucket size cap in MiB (PyTorch default 25; first bucket 1 MiB).
  TORCH_ARG(double, bucket_cap_mb) = 25.0;
  // Verify the model across ranks and broadcast rank 0's parameters and
  // buffers at construction (PyTorch's init_sync).
  TORCH_ARG(bool, init_sync) = true;
  // The set of used parameters and the graph are the same every iteration
  // (PyTorch's static_graph): the first backward records them and later ones
  // skip the search for unused parameters.
  TORCH_ARG(bool, static_graph) = false;
  // Gradients are views into the allreduce buckets (saves one copy).
  TORCH_ARG(bool, gradient_as_bucket_view) = false;
  TORCH_ARG(BufferBroadcast, buffer_broadcast) = BufferBroadcast::kEveryForward;
#if DDPGUARD_HAS_BATCHED_GRAD_COPY
  // c10d::Reducer's batched_grad_copy (2.12): one _foreach_copy_ per bucket
  // instead of one copy per parameter.
  TORCH_ARG(bool, batched_grad_copy) = false;
#endif
#if DDPGUARD_HAS_LAZY_BUCKET_ALLOCATION
  // c10d::Reducer's lazy_bucket_allocation (2.15): buckets are allocated as
  // their gradients become ready and released after the backward.
  TORCH_ARG(bool, lazy_bucket_allocation) = false;
#endif
  TORCH_ARG(HazardAction, hazard_detector) = HazardAction::kWarn;
  // The detector also reports writes that bump no version counter (LibTorch's
  // SGD step, which writes through .data(); an in-place op on .data()) to a
  // parameter or buffer a forward saved, before a backward through it: that
  // backward raises nothing and computes gradients from values the forward
  // did not see. Each grad-mode forward fingerprints the module's tensors
  // (16 elements each, and the storage) and the backward's pre-hook compares
  // them. Such a report is a warning, in kThrow mode too: autograd accepts
  // the backward, and the program runs on as it would without ddpguard.
  TORCH_ARG(bool, silent_writes) = false;
};

namespace detail {
// Whether buffers are broadcast before forwards (PyTorch's
// forward_sync_buffers, before 2.13 broadcast_buffers).
inline bool forward_sync_buffers(const DDPOptions &o) {
#if DDPGUARD_HAS_FORWARD_SYNC_BUFFERS
  return o.forward_sync_buffers().value_or(o.broadcast_buffers().value_or(true));
#else
  return o.broadcast_buffers();
#endif
}
// Whether the construction's sync (init_sync) includes the buffers.
inline bool init_sync_buffers(const DDPOptions &o) {
#if DDPGUARD_HAS_FORWARD_SYNC_BUFFERS
  return o.forward_sync_buffers().has_value() || o.broadcast_buffers().value_or(true);
#else
  return o.broadcast_buffers();
#endif
}
} // namespace detail

// Where a forward was called from; filled in at the caller by default
// arguments, so `ddp(x)` records the user's file and line.
struct CallSite {
  const char *file = "";
  int line = 0;
  const char *function = "";

  // Its default arguments are evaluated where the enclosing default argument
  // is used, i.e. at the user's call (GCC evaluates __builtin_LINE inside a
  // braced initialiser at the declaration instead).
  static CallSite current(const char *file = __builtin_FILE(),
                          int line = __builtin_LINE(),
                          const char *function = __builtin_FUNCTION()) {
    return CallSite{file, line, function};
  }
};

#define DDPGUARD_CALL_SITE ::ddpguard::CallSite::current()

// Thrown by the hazard detector in HazardAction::kThrow mode, from the
// backward that would otherwise fail inside autograd.
struct HazardError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The last report any hazard detector or the in-place error explainer of
// this process printed or threw (empty if none): for launchers' failure
// summaries and for tools.
std::string latest_hazard_report();

// Explains autograd's in-place error ("... modified by an inplace
// operation") for every backward of this process, DDP or not: before the
// error propagates, a report on stderr names the tensor (a parameter, or
// autograd's description), the node that saved it, what kind of write bumped
// it and the backward. A backward that succeeds costs one virtual call.
// init_process_group_from_env and a DDP with its hazard detector on call
// it; a program with neither can. DDPGUARD_EXPLAIN=0 silences it. `rank`
// names the process in the report.
void explain_inplace_errors(int rank = 0);

namespace detail {

class HazardDetector;
class BackwardObserver;
class Verifier;

// The non-template state of one DDP instance (parameters, buffers, reducer,
// detector, PyTorch's require_* flags).
class DDPCore {
public:
  DDPCore(torch::nn::Module &module, ProcessGroupPtr process_group,
          DDPOptions options);
  ~DDPCore();
  DDPCore(const DDPCore &) = delete;
  DDPCore &operator=(const DDPCore &) = delete;

  // PyTorch's DDP.forward before the inner module runs.
  void pre_forward(const CallSite &site);
  // PyTorch's DDP.forward after the inner module ran; `outputs` are the
  // tensors found in its result.
  void post_forward(const std::vector<at::Tensor> &outputs,
                    const CallSite &site);

  bool require_backward_grad_sync() const { return require_backward_grad_sync_; }
  void set_require_backward_grad_sync(bool value) {
    require_backward_grad_sync_ = value;
  }
  const ProcessGroupPtr &process_group() const { return process_group_; }
  const DDPOptions &options() const { return options_; }
  // Whether the last pre_forward broadcast the buffers (for tests and tools).
  bool last_forward_broadcast() const { return last_forward_broadcast_; }

private:
  void sync_buffers(const CallSite &site);

  torch::nn::Module &module_;
  ProcessGroupPtr process_group_;
  DDPOptions options_;
  // Module paths of the parameters the reducer sees, by reducer index.
  std::vector<std::string> param_names_;
  // Declared before the reducer and the observer, whose hooks call it:
  // destroyed after them.
  std::unique_ptr<HazardDetector> detector_;
  // Verification mode (DDPGUARD_VERIFY=1, Verify.h); null when off.
  std::unique_ptr<Verifier> verifier_;
  std::shared_ptr<c10d::Reducer> reducer_;
  // The reducer logs through it when the set of unused parameters changes
  // (find_unused_parameters); destroyed before the reducer, as in PyTorch.
  std::shared_ptr<c10d::Logger> logger_;
  std::unique_ptr<BackwardObserver> backward_observer_;
  bool require_backward_grad_sync_ = true;
  bool require_forward_param_sync_ = true;
  bool forward_grad_mode_ = false;
  bool last_forward_broadcast_ = false;
  // Shared with the reducer's autograd hooks (may run on autograd threads).
  std::shared_ptr<std::atomic<bool>> grad_forward_since_backward_;
};

// Rethrows the current exception of forward_group's input `index`, naming it
// and the shapes of its tensors.
[[noreturn]] void rethrow_group_error(size_t index,
                                      const std::vector<at::Tensor> &inputs);

inline void collect_tensors(const at::Tensor &t, std::vector<at::Tensor> &out) {
  if (t.defined())
    out.push_back(t);
}
template <typename T>
void collect_tensors(const std::vector<T> &v, std::vector<at::Tensor> &out);
template <typename A, typename B>
void collect_tensors(const std::pair<A, B> &p, std::vector<at::Tensor> &out);
template <typename... Ts>
void collect_tensors(const std::tuple<Ts...> &t, std::vector<at::Tensor> &out);
// Anything else (scalars, strings, user structs) holds no tensor DDP tracks.
template <typename T>
void collect_tensors(const T &, std::vector<at::Tensor> &) {}

template <typename T>
void collect_tensors(const std::vector<T> &v, std::vector<at::Tensor> &out) {
  for (const auto &e : v)
    collect_tensors(e, out);
}
template <typename A, typename B>
void collect_tensors(const std::pair<A, B> &p, std::vector<at::Tensor> &out) {
  collect_tensors(p.first, out);
  collect_tensors(p.second, out);
}
template <typename... Ts>
void collect_tensors(const std::tuple<Ts...> &t, std::vector<at::Tensor> &out) {
  std::apply([&](const auto &...e) { (collect_tensors(e, out), ...); }, t);
}

template <typename T> struct is_tuple : std::false_type {};
template <typename... Ts> struct is_tuple<std::tuple<Ts...>> : std::true_type {};

} // namespace detail

template <typename Holder> class DistributedDataParallel {
public:
  // Checks that every rank has the same parameters (count, shapes, dtypes),
  // then broadcasts parameters and buffers from rank 0, as PyTorch does.
  DistributedDataParallel(Holder module, ProcessGroupPtr process_group,
                          DDPOptions options = DDPOptions())
      : module_(std::move(module)),
        core_(std::make_unique<detail::DDPCore>(*module_, std::move(process_group),
                                                std::move(options))) {}

  // One forward: broadcast buffers first (when due), then module->forward.
  template <typename A0>
  auto forward(A0 &&a0, CallSite site = DDPGUARD_CALL_SITE) {
    return run(site, std::forward<A0>(a0));
  }
  template <typename A0, typename A1>
  auto forward(A0 &&a0, A1 &&a1, CallSite site = DDPGUARD_CALL_SITE) {
    return run(site, std::forward<A0>(a0), std::forward<A1>(a1));
  }
  template <typename A0, typename A1, typename A2>
  auto forward(A0 &&a0, A1 &&a1, A2 &&a2, CallSite site = DDPGUARD_CALL_SITE) {
    return run(site, std::forward<A0>(a0), std::forward<A1>(a1),
               std::forward<A2>(a2));
  }
  template <typename A0>
  auto operator()(A0 &&a0, CallSite site = DDPGUARD_CALL_SITE) {
    return run(site, std::forward<A0>(a0));
  }
  template <typename A0, typename A1>
  auto operator()(A0 &&a0, A1 &&a1, CallSite site = DDPGUARD_CALL_SITE) {
    return run(site, std::forward<A0>(a0), std::forward<A1>(a1));
  }
  template <typename A0, typename A1, typename A2>
  auto operator()(A0 &&a0, A1 &&a1, A2 &&a2,
                  CallSite site = DDPGUARD_CALL_SITE) {
    return run(site, std::forward<A0>(a0), std::forward<A1>(a1),
               std::forward<A2>(a2));
  }

  // N inner forwards under one DDP forward: buffers are broadcast once, then
  // module->forward runs once per argument, in order. An argument that is a
  // std::tuple holds the arguments of one call. Returns a std::tuple of the
  // N outputs.
  template <typename G0>
  auto forward_group(G0 &&g0, CallSite site = DDPGUARD_CALL_SITE) {
    return run_group(site, std::forward<G0>(g0));
  }
  template <typename G0, typename G1>
  auto forward_group(G0 &&g0, G1 &&g1, CallSite site = DDPGUARD_CALL_SITE) {
    return run_group(site, std::forward<G0>(g0), std::forward<G1>(g1));
  }
  template <typename G0, typename G1, typename G2>
  auto forward_group(G0 &&g0, G1 &&g1, G2 &&g2,
                     CallSite site = DDPGUARD_CALL_SITE) {
    return run_group(site, std::forward<G0>(g0), std::forward<G1>(g1),
                     std::forward<G2>(g2));
  }
  template <typename G0, typename G1, typename G2, typename G3>
  auto forward_group(G0 &&g0, G1 &&g1, G2 &&g2, G3 &&g3,
                     CallSite site = DDPGUARD_CALL_SITE) {
    return run_group(site, std::forward<G0>(g0), std::forward<G1>(g1),
                     std::forward<G2>(g2), std::forward<G3>(g3));
  }

  Holder &module() { return module_; }
  const Holder &module() const { return module_; }
  const ProcessGroupPtr &process_group() const { return core_->process_group(); }
  const DDPOptions &options() const { return core_->options(); }
  // Whether the most recent forward broadcast the buffers.
  bool last_forward_broadcast() const { return core_->last_forward_broadcast(); }

  // PyTorch's no_sync(): while the guard lives, backward accumulates local
  // gradients without allreduce; the first backward after it synchronises.
  class NoSyncGuard {
  public:
    explicit NoSyncGuard(detail::DDPCore &core)
        : core_(&core), old_(core.require_backward_grad_sync()) {
      core.set_require_backward_grad_sync(false);
    }
    NoSyncGuard(NoSyncGuard &&other) noexcept
        : core_(std::exchange(other.core_, nullptr)), old_(other.old_) {}
    NoSyncGuard(const NoSyncGuard &) = delete;
    NoSyncGuard &operator=(const NoSyncGuard &) = delete;
    NoSyncGuard &operator=(NoSyncGuard &&) = delete;
    ~NoSyncGuard() {
      if (core_)
        core_->set_require_backward_grad_sync(old_);
    }

  private:
    detail::DDPCore *core_;
    bool old_;
  };
  [[nodiscard]] NoSyncGuard no_sync() { return NoSyncGuard(*core_); }

private:
  template <typename... Args> auto run(const CallSite &site, Args &&...args) {
    core_->pre_forward(site);
    auto output = module_->forward(std::forward<Args>(args)...);
    std::vector<at::Tensor> tensors;
    detail::collect_tensors(output, tensors);
    core_->post_forward(tensors, site);
    return output;
  }

  template <typename G> auto call_one(size_t index, G &&group) {
    // Taken before the call, which may move the inputs away.
    std::vector<at::Tensor> inputs;
    detail::collect_tensors(group, inputs);
    try {
      if constexpr (detail::is_tuple<std::decay_t<G>>::value) {
        return std::apply(
            [&](auto &&...args) {
              return module_->forward(std::forward<decltype(args)>(args)...);
            },
            std::forward<G>(group));
      } else {
        return module_->forward(std::forward<G>(group));
      }
    } catch (...) {
      detail::rethrow_group_error(index, inputs);
    }
  }

  template <typename... Groups>
  auto run_group(const CallSite &site, Groups &&...groups) {
    core_->pre_forward(site);
    size_t index = 0;
    // Braced initialisation evaluates the calls left to right.
    std::tuple<decltype(call_one(0, std::forward<Groups>(groups)))...> outputs{
        call_one(index++, std::forward<Groups>(groups))...};
    std::vector<at::Tensor> tensors;
    detail::collect_tensors(outputs, tensors);
    core_->post_forward(tensors, site);
    return outputs;
  }

  Holder module_;
  std::unique_ptr<detail::DDPCore> core_;
};

} // namespace ddpguard
