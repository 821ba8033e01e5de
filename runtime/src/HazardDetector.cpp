#include "HazardDetector.h"
#include "GraphProbe.h"

#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/functions/accumulate_grad.h>
#include <torch/csrc/autograd/graph_task.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <unordered_set>

namespace ddpguard::detail {

namespace {

using torch::autograd::Node;

// A buffer a broadcast overwrote after the recorded forward.
struct ClobberedBuffer {
  std::string name;
  at::Tensor tensor; // the module's buffer
  uint32_t version_before = 0; // before the first broadcast after the forward
};

std::string where(const CallSite &s) {
  std::ostringstream w;
  w << s.file << ":" << s.line;
  if (s.function && *s.function)
    w << " (in " << s.function << ")";
  return w.str();
}

bool same_site(const CallSite &a, const CallSite &b) {
  return a.line == b.line && std::strcmp(a.file, b.file) == 0;
}

// A parameter or buffer whose version moved since the recorded forward.
struct MovedTensor {
  const WatchedTensor *watched;
  uint32_t version_before = 0; // at the end of the forward
  uint32_t version_now = 0;
};

// What a watched tensor held: its storage and up to kSamples elements spread
// over it, as raw bytes (NaNs compare by their bits). A write that changes
// none of the sampled elements is missed, as the Python mode's sampled
// fingerprint misses it.
struct Fingerprint {
  const void *data = nullptr;
  std::string samples;
  bool operator==(const Fingerprint &o) const {
    return data == o.data && samples == o.samples;
  }
};

constexpr int64_t kSamples = 16;

Fingerprint fingerprint_of(const at::Tensor &t) {
  Fingerprint f;
  if (!t.defined() || t.numel() == 0 || t.is_sparse())
    return f;
  f.data = t.data_ptr();
  const int64_t n = t.numel();
  if (t.is_cpu() && t.is_contiguous()) {
    // Straight from memory: ATen ops here cost microseconds a tensor, a
    // tenth of a small model's step (bench/runtime, silent_writes mode).
    const auto *bytes = static_cast<const char *>(t.data_ptr());
    const int64_t size = t.element_size(), picked = std::min(n, kSamples);
    f.samples.resize(picked * size);
    for (int64_t i = 0; i < picked; ++i) {
      const int64_t at = picked == 1 ? 0 : i * (n - 1) / (picked - 1);
      std::memcpy(&f.samples[i * size], bytes + at * size, size);
    }
    return f;
  }
  at::NoGradGuard no_grad;
  const at::Tensor flat = t.detach().reshape({-1});
  const at::Tensor picked =
      n <= kSamples ? flat
                    : flat.index_select(0, at::linspace(0, n - 1, kSamples,
                                                        at::TensorOptions()
                                                            .device(t.device()))
                                               .to(at::kLong));
  const at::Tensor host = picked.to(at::kCPU).contiguous();
  f.samples.assign(static_cast<const char *>(host.data_ptr()),
                   host.numel() * host.element_size());
  return f;
}

// A watched tensor whose contents changed since the forward while its version
// did not: a write autograd cannot see.
struct SilentlyWritten {
  const WatchedTensor *watched;
  uint32_t version = 0;
};

// Why a node will fail autograd's version check.
enum class Cause {
  kBroadcast, // passes once the broadcast buffers are put back
  kWrite,     // passes once the moved parameters and buffers are put back
  kOther,     // a tensor that is not the module's (an activation, an input)
};

struct Finding {
  std::string node; // the node autograd will reject
  Cause cause = Cause::kOther;
  // kBroadcast: the clobbered buffers it saved; kWrite: one line per moved
  // parameter or buffer it saved; kOther: autograd's description.
  std::vector<std::string> saved;
};

struct Inspection {
  std::vector<Finding> stale;             // the backward fails on these
  std::vector<std::string> uninspectable; // reported conservatively
  bool hazard() const { return !stale.empty() || !uninspectable.empty(); }
  bool broadcast_only() const {
    return std::all_of(stale.begin(), stale.end(), [](const Finding &f) {
      return f.cause == Cause::kBroadcast;
    });
  }
};

std::string written_line(const MovedTensor &m, const std::string &node,
                         const std::vector<ClobberedBuffer> &broadcast) {
  std::ostringstream os;
  os << m.watched->name << " (" << (m.watched->buffer ? "buffer" : "parameter")
     << "): saved by " << node << " at version " << m.version_before
     << ", now at version " << m.version_now;
  const auto *impl = m.watched->tensor.unsafeGetTensorImpl();
  if (std::any_of(broadcast.begin(), broadcast.end(), [&](const ClobberedBuffer &b) {
        return b.tensor.unsafeGetTensorImpl() == impl;
      }))
    os << " (a later forward's buffer broadcast is one of the writes)";
  return os.str();
}

// Whether the current backward will run `node`: every reachable node for
// backward() without inputs (empty exec_info); for autograd::grad and
// backward(inputs=...) only those the engine marked as needed.
bool will_run(Node *node) {
  const auto *exec_info = torch::autograd::get_current_graph_task_exec_info();
  if (!exec_info || exec_info->empty())
    return true;
  auto it = exec_info->find(node);
  return it != exec_info->end() && it->second.needed_;
}

// Every node the current backward will execute from `root` on.
Inspection inspect(const NodePtr &root,
                   const std::vector<ClobberedBuffer> &buffers,
                   const std::vector<MovedTensor> &moved) {
  Inspection out;
  walk_graph({root}, [&](const NodePtr &node) {
    if (!will_run(node.get()))
      return false;
    ProbeResult first = probe(node);
    if (first.kind == Probe::kStale) {
      Finding finding{node->name(), Cause::kOther, {}};
      if (!buffers.empty()) {
        VersionRollback rollback;
        for (const auto &b : buffers)
          rollback.roll_back(b.tensor, b.version_before);
        ProbeResult again = probe(node);
        // Clean once the broadcast is undone: the broadcast is why it fails.
        if (again.kind == Probe::kClean)
          for (const auto &b : buffers)
            for (const auto &t : again.unpacked)
              if (aliases(t, b.tensor) && t._version() == b.version_before) {
                finding.saved.push_back(b.name);
                break;
              }
        if (!finding.saved.empty())
          finding.cause = Cause::kBroadcast;
      }
      if (finding.cause == Cause::kOther && !moved.empty()) {
        VersionRollback rollback;
        for (const auto &m : moved)
          rollback.roll_back(m.watched->tensor, m.version_before);
        ProbeResult again = probe(node);
        // Clean once the module's tensors are back at their versions of the
        // forward: writes to them since are why it fails.
        if (again.kind == Probe::kClean)
          for (const auto &m : moved)
            for (const auto &t : again.unpacked)
              if (aliases(t, m.watched->tensor) && t._version() == m.version_before) {
                finding.saved.push_back(written_line(m, finding.node, buffers));
                break;
              }
        if (!finding.saved.empty())
          finding.cause = Cause::kWrite;
      }
      if (finding.cause == Cause::kOther)
        finding.saved.push_back(stale_tensor_description(first.message));
      out.stale.push_back(std::move(finding));
    } else if (first.kind == Probe::kUninspectable) {
      out.uninspectable.push_back(node->name() + " (" + first.message + ")");
    }
    return true;
  });
  return out;
}

// The nodes the current backward will run from `root` on that saved one of
// `written`: one line per (tensor, node).
std::vector<std::string> silently_written_saves(
    const NodePtr &root, const std::vector<SilentlyWritten> &written) {
  std::vector<std::string> lines;
  walk_graph({root}, [&](const NodePtr &node) {
    if (!will_run(node.get()))
      return false;
    // A leaf's AccumulateGrad holds the parameter to add its gradient to,
    // and computes nothing from its values.
    if (dynamic_cast<torch::autograd::AccumulateGrad *>(node.get()))
      return true;
    const ProbeResult saved = probe(node);
    for (const auto &w : written)
      if (std::any_of(saved.unpacked.begin(), saved.unpacked.end(),
                      [&](const at::Tensor &t) { return aliases(t, w.watched->tensor); })) {
        std::ostringstream os;
        os << w.watched->name << " (" << (w.watched->buffer ? "buffer" : "parameter")
           << "): saved by " << node->name() << " at version " << w.version
           << ", still at version " << w.version << ", its contents changed";
        lines.push_back(os.str());
      }
    return true;
  });
  return lines;
}

// What one recorded graph (a forward's, or a gradient graph built from one
// by a create_graph backward) has seen since it was built.
struct Watch {
  CallSite site;              // the forward
  bool gradient_graph = false; // built by a create_graph backward from it
  std::mutex mutex;
  std::vector<CallSite> clobbering;     // broadcasting forwards since
  std::vector<ClobberedBuffer> buffers; // what they overwrote
  // The versions of the detector's watched tensors at the end of the forward,
  // and with silent_writes their fingerprints.
  std::vector<uint32_t> versions;
  std::vector<Fingerprint> fingerprints;
  bool reported_silent = false;
  bool reported = false;
  std::unordered_set<const Node *> post_hooked; // see GradientGraphHook

  std::string message(int rank, const Inspection &found,
                      const std::string &root, const std::string &caller) const {
    return found.broadcast_only() && !clobbering.empty()
               ? broadcast_message(rank, found, root, caller)
               : write_message(rank, found, root, caller);
  }

  // "Several forwards before one backward": every failing node passes once
  // the broadcast is undone.
  std::string broadcast_message(int rank, const Inspection &found,
                                const std::string &root,
                                const std::string &caller) const {
    std::ostringstream os;
    os << "ddpguard: DistributedDataParallel hazard on rank " << rank
       << ": several forwards before one backward.\n"
       << "  forward at " << where(site) << " ran with grad mode on; its "
       << (gradient_graph ? "gradient graph (built by a backward with "
                            "create_graph) "
                          : "graph ")
       << (found.stale.empty() ? "may have saved module buffers for backward.\n"
                               : "saved module buffers for backward:\n");
    for (const auto &f : found.stale) {
      os << "   ";
      for (const auto &b : f.saved)
        os << " " << b;
      os << " (saved by " << f.node << ")\n";
    }
    for (const auto &c : clobbering)
      os << "  forward at " << where(c)
         << " then broadcast the buffers from rank 0 in place "
            "(broadcast_buffers=true), bumping their version counters.\n";
    if (!found.uninspectable.empty()) {
      os << "  ddpguard could not inspect the saved tensors of these nodes of "
            "that graph, so it reports conservatively (autograd may accept "
            "this backward):\n";
      for (const auto &n : found.uninspectable)
        os << "    " << n << "\n";
    }
    describe_traversal(os, found, root, caller);
    os << "  Fixes:\n"
       << "    1. DDPOptions().broadcast_buffers(false): buffers are no longer "
          "synchronised; each rank keeps its own running statistics;\n"
       << "    2. one DDP forward for all inputs: auto [o1, o2] = "
          "ddp.forward_group(x1, x2); (one broadcast, keeps buffer sync);\n"
       << "    3. DDPOptions().buffer_broadcast(ddpguard::BufferBroadcast::"
          "kOncePerBackward): broadcast only on the first forward after a "
          "backward.\n";
    return os.str();
  }

  // "This backward ... traverses the graph of the forward at ...": the line
  // both reports share.
  void describe_traversal(std::ostream &os, const Inspection &found,
                          const std::string &root,
                          const std::string &caller) const {
    os << "  This backward";
    if (!caller.empty())
      os << " (called from " << caller << ")";
    os << " traverses the " << (gradient_graph ? "gradient graph" : "graph")
       << " of the forward at " << site.file << ":" << site.line
       << " (entering at its output node " << root << ")";
    if (!found.stale.empty())
      os << ", so autograd rejects it at " << found.stale.front().node
         << " (\"one of the variables needed for gradient computation has "
            "been modified by an inplace operation\")";
    os << ".\n";
  }

  // A write of a saved parameter or buffer that bumped no version counter.
  std::string silent_message(int rank, const std::vector<std::string> &saved,
                             const std::string &root,
                             const std::string &caller) const {
    std::ostringstream os;
    os << "ddpguard: silent write on rank " << rank
       << ": a tensor saved for backward was written after the forward that "
          "saved it, invisibly to autograd (its version counter did not "
          "move).\n"
       << "  forward at " << where(site) << " ran with grad mode on; its "
       << (gradient_graph ? "gradient graph" : "graph")
       << " saved these tensors, written since:\n";
    for (const auto &line : saved)
      os << "    " << line << "\n";
    os << "  The write came after the forward at " << site.file << ":" << site.line
       << " and before this backward, and bumped no version counter: "
          "LibTorch's SGD step (it writes through .data()), or an in-place op "
          "on .data() or on a tensor sharing the storage with its own version "
          "counter.\n"
       << "  This backward";
    if (!caller.empty())
      os << " (called from " << caller << ")";
    os << " traverses the graph of the forward at " << site.file << ":"
       << site.line << " (entering at its output node " << root
       << "): autograd raises nothing, and it computes gradients from values "
          "the forward did not see.\n"
       << kWriteFixes
       << "    4. a write autograd counts (torch::optim::Adam and the other "
          "optimizers but SGD; an in-place op under NoGradGuard rather than on "
          ".data()) makes autograd raise its in-place error here instead.\n";
    return os.str();
  }

  // Any other write of a saved tensor (an optimizer step, an in-place op), or
  // a broadcast together with one.
  std::string write_message(int rank, const Inspection &found,
                            const std::string &root,
                            const std::string &caller) const {
    std::ostringstream os;
    os << "ddpguard: in-place write hazard on rank " << rank
       << ": a tensor saved for backward was written in place after the "
          "forward that saved it.\n"
       << "  forward at " << where(site) << " ran with grad mode on; its "
       << (gradient_graph ? "gradient graph (built by a backward with "
                            "create_graph) "
                          : "graph ")
       << (found.stale.empty() ? "may have saved tensors that were written since.\n"
                               : "saved these tensors, written since:\n");
    for (const auto &f : found.stale)
      for (const auto &line : f.saved)
        switch (f.cause) {
        case Cause::kBroadcast:
          os << "    " << line << " (buffer): saved by " << f.node
             << ", then broadcast from rank 0 in place by a later forward\n";
          break;
        case Cause::kWrite:
          os << "    " << line << "\n";
          break;
        case Cause::kOther:
          os << "    a tensor that is not a parameter or buffer of the module "
                "(an activation or an input), saved by "
             << f.node << ": " << line << "\n";
          break;
        }
    for (const auto &c : clobbering)
      os << "  forward at " << where(c)
         << " broadcast the buffers from rank 0 in place "
            "(broadcast_buffers=true), bumping their version counters.\n";
    if (!found.uninspectable.empty()) {
      os << "  ddpguard could not inspect the saved tensors of these nodes of "
            "that graph, so it reports conservatively (autograd may accept "
            "this backward):\n";
      for (const auto &n : found.uninspectable)
        os << "    " << n << "\n";
    }
    os << "  The write came after the forward at " << site.file << ":"
       << site.line
       << " and before this backward (ddpguard sees the version counters, "
          "not the call that bumped them): an optimizer step "
          "(torch::optim::Adam and most others update parameters in place; "
          "LibTorch's SGD writes through .data() and bumps nothing), or an "
          "in-place op such as clamp_, copy_, mul_, add_ or +=, under "
          "NoGradGuard too.\n";
    describe_traversal(os, found, root, caller);
    os << kWriteFixes;
    return os.str();
  }
};

struct Record {
  std::shared_ptr<Watch> watch;
  std::vector<WeakNodePtr> roots;
};

} // namespace

struct HazardDetector::Shared {
  HazardAction action;
  bool silent_writes = false;
  int rank;
  std::vector<WatchedTensor> watched; // fixed at construction
  std::function<std::vector<at::Tensor>()> module_buffers;
  std::mutex mutex;
  std::vector<Record> records;

  // Records `roots` (output nodes of a forward, or of a gradient graph) with
  // a pre-hook on each.
  void watch(const std::shared_ptr<Shared> &self, std::vector<NodePtr> roots,
             const CallSite &site, bool gradient_graph);
  // A create_graph backward is about to run `root`'s graph: put a post-hook
  // on the nodes it will run that saved module buffers.
  void on_create_graph(const std::shared_ptr<Shared> &self,
                       const NodePtr &root,
                       const std::shared_ptr<Watch> &watch);
  // The watched tensors whose versions differ from `versions`.
  std::vector<MovedTensor> moved_since(const std::vector<uint32_t> &versions) const {
    std::vector<MovedTensor> moved;
    for (size_t i = 0; i < watched.size(); ++i)
      if (const uint32_t now = version_of(watched[i].tensor); now != versions[i])
        moved.push_back({&watched[i], versions[i], now});
    return moved;
  }
  // The watched tensors whose contents changed while their versions stayed
  // those of the forward (only with silent_writes).
  std::vector<SilentlyWritten> silently_written(const Watch &w) const {
    std::vector<SilentlyWritten> written;
    if (!silent_writes)
      return written;
    for (size_t i = 0; i < watched.size(); ++i)
      if (const uint32_t now = version_of(watched[i].tensor);
          now == w.versions[i] && !(fingerprint_of(watched[i].tensor) == w.fingerprints[i]))
        written.push_back({&watched[i], now});
    return written;
  }
};

namespace {

// On a recorded output node: runs whenever a backward is about to run it.
class OutputNodeHook : public torch::autograd::FunctionPreHook {
public:
  OutputNodeHook(std::weak_ptr<HazardDetector::Shared> shared,
                 std::shared_ptr<Watch> watch, const NodePtr &root)
      : shared_(std::move(shared)), watch_(std::move(watch)), root_(root) {}
  torch::autograd::variable_list
  operator()(const torch::autograd::variable_list &grads) override {
    auto root = root_.lock();
    auto shared = shared_.lock();
    if (!root || !shared)
      return grads;
    if (at::GradMode::is_enabled()) // create_graph
      shared->on_create_graph(shared, root, watch_);
    std::string message;
    {
      std::lock_guard<std::mutex> lock(watch_->mutex);
      if (!watch_->reported_silent) {
        const std::vector<SilentlyWritten> written = shared->silently_written(*watch_);
        const std::vector<std::string> saved =
            written.empty() ? std::vector<std::string>()
                            : silently_written_saves(root, written);
        if (!saved.empty()) {
          watch_->reported_silent = true;
          const std::string silent =
              watch_->silent_message(shared->rank, saved, root->name(), caller_frame());
          remember_report(silent);
          std::fputs(silent.c_str(), stderr);
          std::fflush(stderr);
        }
      }
      const std::vector<MovedTensor> moved = shared->moved_since(watch_->versions);
      if (watch_->clobbering.empty() && moved.empty())
        return grads; // nothing written since this graph was built
      if (shared->action == HazardAction::kWarn && watch_->reported)
        return grads;
      const Inspection found = inspect(root, watch_->buffers, moved);
      if (!found.hazard())
        return grads;
      watch_->reported = true;
      message = watch_->message(shared->rank, found, root->name(), caller_frame());
    }
    remember_report(message);
    if (shared->action == HazardAction::kThrow)
      throw HazardError(message);
    std::fputs(message.c_str(), stderr);
    std::fflush(stderr);
    return grads;
  }

private:
  std::weak_ptr<HazardDetector::Shared> shared_;
  std::shared_ptr<Watch> watch_;
  WeakNodePtr root_; // the node owns this hook
};

// On a node that saved module buffers, during a create_graph backward: the
// gradients it produces carry new nodes (its double backward) that may save
// the same buffers; they are recorded as the outputs of a gradient graph.
class GradientGraphHook : public torch::autograd::FunctionPostHook {
public:
  GradientGraphHook(std::weak_ptr<HazardDetector::Shared> shared, CallSite site)
      : shared_(std::move(shared)), site_(site) {}
  torch::autograd::variable_list
  operator()(const torch::autograd::variable_list &outputs,
             const torch::autograd::variable_list & /*inputs*/) override {
    auto shared = shared_.lock();
    if (!shared || !at::GradMode::is_enabled())
      return outputs;
    std::vector<NodePtr> roots;
    for (const auto &out : outputs)
      if (out.defined())
        if (auto fn = out.grad_fn())
          if (std::find(roots.begin(), roots.end(), fn) == roots.end())
            roots.push_back(std::move(fn));
    if (!roots.empty())
      shared->watch(shared, std::move(roots), site_, /*gradient_graph=*/true);
    return outputs;
  }

private:
  std::weak_ptr<HazardDetector::Shared> shared_;
  CallSite site_;
};

template <typename Records> void drop_expired(Records &records) {
  records.erase(std::remove_if(records.begin(), records.end(),
                               [](const auto &r) {
                                 for (const auto &root : r.roots)
                                   if (!root.expired())
                                     return false;
                                 return true;
                               }),
                records.end());
}

} // namespace

void HazardDetector::Shared::watch(const std::shared_ptr<Shared> &self,
                                   std::vector<NodePtr> roots,
                                   const CallSite &site, bool gradient_graph) {
  auto w = std::make_shared<Watch>();
  w->site = site;
  w->gradient_graph = gradient_graph;
  w->versions.reserve(watched.size());
  for (const auto &t : watched)
    w->versions.push_back(version_of(t.tensor));
  if (silent_writes)
    for (const auto &t : watched)
      w->fingerprints.push_back(fingerprint_of(t.tensor));
  Record record{w, {}};
  for (auto &node : roots) {
    node->add_pre_hook(std::make_unique<OutputNodeHook>(self, w, node));
    record.roots.emplace_back(node);
  }
  std::lock_guard<std::mutex> lock(mutex);
  // Records whose graphs are gone can never be traversed again.
  drop_expired(records);
  records.push_back(std::move(record));
}

void HazardDetector::Shared::on_create_graph(const std::shared_ptr<Shared> &self,
                                             const NodePtr &root,
                                             const std::shared_ptr<Watch> &watch) {
  const std::vector<at::Tensor> buffers = module_buffers();
  if (buffers.empty())
    return;
  walk_graph({root}, [&](const NodePtr &node) {
    if (!will_run(node.get()))
      return false;
    const ProbeResult saved = probe(node);
    const bool saves_buffer = std::any_of(
        saved.unpacked.begin(), saved.unpacked.end(), [&](const at::Tensor &t) {
          return std::any_of(buffers.begin(), buffers.end(),
                             [&](const at::Tensor &b) { return aliases(t, b); });
        });
    if (saves_buffer) {
      std::lock_guard<std::mutex> lock(watch->mutex);
      if (watch->post_hooked.insert(node.get()).second)
        node->add_post_hook(std::make_unique<GradientGraphHook>(self, watch->site));
    }
    return true;
  });
}

HazardDetector::HazardDetector(HazardAction action, bool silent_writes, int rank,
                               std::vector<WatchedTensor> watched,
                               std::function<std::vector<at::Tensor>()> buffers)
    : shared_(std::make_shared<Shared>()) {
  shared_->action = action;
  shared_->silent_writes = silent_writes;
  shared_->rank = rank;
  shared_->watched = std::move(watched);
  shared_->module_buffers = std::move(buffers);
}

void HazardDetector::on_grad_forward(const std::vector<at::Tensor> &outputs,
                                     const CallSite &site) {
  std::vector<NodePtr> roots;
  for (const auto &out : outputs)
    if (auto fn = out.grad_fn())
      if (std::find(roots.begin(), roots.end(), fn) == roots.end())
        roots.push_back(std::move(fn));
  if (!roots.empty())
    shared_->watch(shared_, std::move(roots), site, /*gradient_graph=*/false);
}

void HazardDetector::on_broadcast(const CallSite &site,
                                  const std::vector<std::string> &names,
                                  const std::vector<at::Tensor> &buffers) {
  std::lock_guard<std::mutex> lock(shared_->mutex);
  drop_expired(shared_->records);
  for (auto &record : shared_->records) {
    Watch &watch = *record.watch;
    std::lock_guard<std::mutex> watch_lock(watch.mutex);
    if (std::none_of(watch.clobbering.begin(), watch.clobbering.end(),
                     [&](const CallSite &c) { return same_site(c, site); }))
      watch.clobbering.push_back(site);
    for (size_t i = 0; i < buffers.size() && i < names.size(); ++i) {
      const auto *impl = buffers[i].unsafeGetTensorImpl();
      if (std::any_of(watch.buffers.begin(), watch.buffers.end(),
                      [&](const ClobberedBuffer &b) {
                        return b.tensor.unsafeGetTensorImpl() == impl;
                      }))
        continue; // keep the version from before the first broadcast
      const auto &counter = impl->version_counter();
      watch.buffers.push_back({names[i], buffers[i],
                               counter.enabled() ? counter.current_version() : 0u});
    }
  }
}

} // namespace ddpguard::detail
