#include <ddpguard/runtime/DistributedDataParallel.h>

#include "HazardDetector.h"
#include "Reducer.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/grad_mode.h>
#include <torch/csrc/distributed/c10d/comm.hpp>

#include <sstream>

namespace ddpguard::detail {
namespace {

// DDP's broadcast_bucket_size (250 MiB) for parameter and buffer broadcasts.
constexpr size_t kBroadcastBucketBytes = 250 * 1024 * 1024;

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

// Every rank must hold the same parameters (PyTorch's
// _verify_param_shape_across_processes); all ranks see the same gathered
// metadata, so all of them fail with the same message instead of hanging in
// mismatched collectives later.
void verify_params_across_processes(const ProcessGroupPtr &pg,
                                    const std::vector<at::Tensor> &params,
                                    const std::vector<std::string> &names) {
  const int world = pg->getSize();
  // Collectives run where the parameters live (NCCL needs CUDA tensors).
  const at::Device device = params.empty() ? at::Device(at::kCPU) : params[0].device();
  std::vector<int64_t> meta;
  for (const auto &p : params) {
    meta.push_back(static_cast<int64_t>(p.scalar_type()));
    meta.push_back(p.dim());
    for (auto s : p.sizes())
      meta.push_back(s);
  }
  auto counts = allgather_longs(
      pg, {static_cast<int64_t>(params.size()), static_cast<int64_t>(meta.size())},
      2, device);
  int64_t longest = 0;
  for (int r = 0; r < world; ++r) {
    if (counts[2 * r] != counts[0])
      TORCH_CHECK(false,
                  "ddpguard::DistributedDataParallel: the model differs across "
                  "ranks: rank 0 has ",
                  counts[0], " parameters that require grad, rank ", r, " has ",
                  counts[2 * r]);
    longest = std::max(longest, counts[2 * r + 1]);
  }
  auto all = allgather_longs(pg, meta, static_cast<size_t>(longest), device);
  for (int r = 1; r < world; ++r) {
    const int64_t *ref = all.data();
    const int64_t *other = all.data() + r * longest;
    size_t pos = 0;
    for (size_t i = 0; i < params.size(); ++i) {
      auto read = [](const int64_t *m, size_t at) {
        std::ostringstream os;
        os << "[";
        for (int64_t d = 0; d < m[at + 1]; ++d)
          os << (d ? ", " : "") << m[at + 2 + d];
        os << "] " << c10::toString(static_cast<c10::ScalarType>(m[at]));
        return os.str();
      };
      std::string a = read(ref, pos), b = read(other, pos);
      if (a != b)
        TORCH_CHECK(false,
                    "ddpguard::DistributedDataParallel: the model differs "
                    "across ranks: parameter ",
                    i, " ('", names[i], "') is ", a, " on rank 0 but ", b,
                    " on rank ", r);
      pos += 2 + static_cast<size_t>(ref[pos + 1]);
    }
  }
}

} // namespace

DDPCore::DDPCore(torch::nn::Module &module, ProcessGroupPtr process_group,
                 DDPOptions options)
    : module_(module), process_group_(std::move(process_group)),
      options_(std::move(options)),
      grad_forward_since_backward_(std::make_shared<std::atomic<bool>>(false)) {
  TORCH_CHECK(process_group_, "ddpguard::DistributedDataParallel: null process group");
  TORCH_CHECK(options_.bucket_cap_mb() > 0,
              "ddpguard::DistributedDataParallel: bucket_cap_mb must be positive");
  std::vector<at::Tensor> params;
  std::vector<std::string> names;
  std::vector<at::Tensor> states;
  for (const auto &item : module_.named_parameters(/*recurse=*/true)) {
    states.push_back(item.value().detach());
    if (item.value().requires_grad()) {
      params.push_back(item.value());
      names.push_back(item.key());
    }
  }
  for (const auto &item : module_.named_buffers(/*recurse=*/true))
    states.push_back(item.value().detach());

  verify_params_across_processes(process_group_, params, names);
  if (!states.empty()) {
    at::NoGradGuard no_grad;
    c10d::broadcast_coalesced(process_group_, states, kBroadcastBucketBytes, 0);
  }

  if (options_.hazard_detector() != HazardAction::kSilent &&
      options_.broadcast_buffers())
    detector_ = std::make_unique<HazardDetector>(options_.hazard_detector(),
                                                 process_group_->getRank());
  reducer_ = std::make_unique<Reducer>(
      std::move(params), std::move(names), process_group_,
      static_cast<int64_t>(options_.bucket_cap_mb() * 1024 * 1024),
      options_.find_unused_parameters(),
      [flag = grad_forward_since_backward_, detector = detector_.get()] {
        flag->store(false);
        if (detector)
          detector->on_backward();
      });
}

DDPCore::~DDPCore() = default;

void DDPCore::pre_forward(const CallSite &site) {
  forward_grad_mode_ = at::GradMode::is_enabled();
  if (forward_grad_mode_) {
    reducer_->ensure_prior_reduction_finished();
    reducer_->rebuild_buckets_if_needed();
  }
  // PyTorch's will_sync_module_buffers(): the previous forward (or the
  // construction) asked for it and broadcast_buffers is on.
  bool sync = require_forward_param_sync_ && options_.broadcast_buffers();
  if (sync && options_.buffer_broadcast() == BufferBroadcast::kOncePerBackward &&
      grad_forward_since_backward_->load())
    sync = false;
  last_forward_broadcast_ = false;
  if (sync)
    sync_buffers(site);
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
  if (detector_)
    detector_->on_broadcast(site, named.keys());
  at::NoGradGuard no_grad;
  // PyTorch's own call: copies the broadcast result back with an in-place
  // copy_, which bumps each buffer's version counter.
  c10d::broadcast_coalesced(process_group_, buffers, kBroadcastBucketBytes, 0);
  last_forward_broadcast_ = true;
}

void DDPCore::post_forward(const std::vector<at::Tensor> &outputs,
                           const CallSite &site) {
  if (forward_grad_mode_ && require_backward_grad_sync_) {
    require_forward_param_sync_ = true;
    reducer_->prepare_for_backward(options_.find_unused_parameters()
                                       ? outputs
                                       : std::vector<at::Tensor>{});
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
