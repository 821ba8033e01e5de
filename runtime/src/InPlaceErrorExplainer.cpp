// Explains autograd's in-place error ("one of the variables needed for
// gradient computation has been modified by an inplace operation") for every
// backward of the process, DDP or not: an optimizer step on a plain module, an
// in-place op on an activation, a write to a parameter under NoGradGuard.
//
// It is autograd's default engine with one addition: when a backward fails
// with that error, and no hazard detector has reported it already, it walks
// the graph the backward was given (still alive: the caller holds its
// roots), finds the node whose saved tensor autograd rejected (the probe
// yields the same message), and names the tensor: a parameter the graph
// accumulates into when putting that leaf's version counter back makes the
// node pass, else autograd's own description of it. The report goes to
// stderr before the error propagates. A backward that succeeds costs one
// virtual call and a counter read, nothing else.
#include "GraphProbe.h"

#include <ddpguard/runtime/DistributedDataParallel.h>

#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/functions/accumulate_grad.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <regex>
#include <sstream>

namespace ddpguard::detail {

namespace {

using torch::autograd::edge_list;
using torch::autograd::variable_list;

constexpr const char *kInPlaceError = "modified by an inplace operation";

std::atomic<int> explainer_rank{0};

// The node autograd rejected, and what ddpguard could learn of its tensor.
struct StaleNode {
  NodePtr node;
  at::Tensor parameter; // the leaf it saved, when found among the graph's
  uint32_t saved_version = 0;
  uint32_t version_now = 0;
};

// "... is at version 2; expected version 1 instead."
bool parse_versions(const std::string &error, uint32_t &now, uint32_t &saved) {
  static const std::regex versions(
      R"(is at version (\d+); expected version (\d+))");
  std::smatch m;
  if (!std::regex_search(error, m, versions))
    return false;
  now = static_cast<uint32_t>(std::stoul(m[1]));
  saved = static_cast<uint32_t>(std::stoul(m[2]));
  return true;
}

// Walks the graph from the backward's roots; returns the nodes whose saved
// tensor fails autograd's check with exactly `error`'s description, each
// with the parameter it saved when one of the graph's leaves is that tensor.
std::vector<StaleNode> find_stale(const edge_list &roots,
                                  const std::string &error) {
  const std::string description = stale_tensor_description(error);
  std::vector<NodePtr> starts;
  for (const auto &edge : roots)
    starts.push_back(edge.function);
  std::vector<at::Tensor> leaves; // what the graph accumulates into
  std::vector<StaleNode> stale;
  walk_graph(std::move(starts), [&](const NodePtr &node) {
    if (auto *accumulate =
            dynamic_cast<torch::autograd::AccumulateGrad *>(node.get()))
      leaves.push_back(accumulate->variable);
    const ProbeResult found = probe(node);
    if (found.kind == Probe::kStale &&
        stale_tensor_description(found.message) == description)
      stale.push_back({node, {}, 0, 0});
    return true;
  });
  uint32_t now = 0, saved = 0;
  if (!parse_versions(error, now, saved))
    return stale;
  for (auto &s : stale) {
    s.saved_version = saved;
    s.version_now = now;
    for (const auto &leaf : leaves) {
      if (!leaf.defined() || version_of(leaf) != now)
        continue;
      VersionRollback rollback;
      rollback.roll_back(leaf, saved);
      const ProbeResult again = probe(s.node);
      if (std::any_of(again.unpacked.begin(), again.unpacked.end(),
                      [&](const at::Tensor &t) {
                        return aliases(t, leaf) && t._version() == saved;
                      })) {
        s.parameter = leaf;
        break;
      }
    }
  }
  return stale;
}

std::string shape_of(const at::Tensor &t) {
  std::ostringstream os;
  os << t.sizes();
  return os.str();
}

std::string report(int rank, const std::vector<StaleNode> &stale,
                   const edge_list &roots, const std::string &error,
                   const std::string &caller) {
  std::ostringstream os;
  os << "ddpguard: in-place write hazard on rank " << rank
     << ": a tensor saved for backward was written in place after the op "
        "that saved it, so autograd rejects this backward.\n";
  const bool parameter = !stale.empty() && stale.front().parameter.defined();
  for (const auto &s : stale) {
    if (s.parameter.defined())
      os << "  tensor: a parameter " << shape_of(s.parameter) << " ("
         << s.parameter.toString()
         << ", a leaf the graph accumulates gradients into; no DDP hazard "
            "detector reported it, so its module path is unknown): saved by "
         << s.node->name() << " at version " << s.saved_version
         << ", now at version " << s.version_now << "\n";
    else
      os << "  tensor: not a parameter of this graph (an activation, an input "
            "or a buffer): "
         << stale_tensor_description(error) << "; saved by " << s.node->name()
         << "\n";
  }
  if (stale.empty())
    os << "  tensor: " << stale_tensor_description(error) << "\n";
  if (parameter)
    os << "  write: after the forward that ran " << stale.front().node->name()
       << "'s op and before this backward, outside autograd's record: an "
          "optimizer step (torch::optim::Adam, RMSprop and most others update "
          "parameters in place; LibTorch's SGD writes through .data() and "
          "bumps nothing) or an in-place op under NoGradGuard (clamp_, copy_, "
          "mul_, add_). ddpguard sees the version counter, not the call that "
          "bumped it.\n";
  else
    os << "  write: an in-place op on that tensor or on a view of it (mul_, "
          "relu_, clamp_, div_, +=, index_put_, x[i] = ...) after "
       << (stale.empty() ? std::string("the op that saved it")
                         : stale.front().node->name() + "'s op")
       << " ran and before this backward. ddpguard sees the version counter, "
          "not the call that bumped it.\n";
  os << "  backward";
  if (!caller.empty())
    os << " (called from " << caller << ")";
  os << ": enters the graph at";
  for (const auto &edge : roots)
    if (edge.function)
      os << " " << edge.function->name();
  os << " and reaches "
     << (stale.empty() ? std::string("the saving node")
                       : stale.front().node->name())
     << ", where autograd's check fails.\n"
     << kWriteFixes;
  return os.str();
}

class ExplainingEngine final : public torch::autograd::Engine {
public:
  static torch::autograd::Engine &get() {
    static ExplainingEngine engine;
    return engine;
  }

  variable_list execute(const edge_list &roots, const variable_list &inputs,
                        bool keep_graph, bool create_graph,
                        bool accumulate_grad,
                        const edge_list &outputs) override {
    const uint64_t reports_before = reports_so_far();
    try {
      return Engine::execute(roots, inputs, keep_graph, create_graph,
                             accumulate_grad, outputs);
    } catch (const c10::Error &e) {
      const std::string error = e.what_without_backtrace();
      // A hazard detector that reported this backward has named the write.
      if (error.find(kInPlaceError) != std::string::npos &&
          reports_so_far() == reports_before && enabled())
        explain(roots, error);
      throw;
    }
  }

private:
  // Read at a failure only, so a test (or a user) can switch it per run.
  static bool enabled() {
    const char *off = std::getenv("DDPGUARD_EXPLAIN");
    return !(off && std::strcmp(off, "0") == 0);
  }

  static void explain(const edge_list &roots, const std::string &error) {
    std::string message;
    try {
      message = report(explainer_rank.load(), find_stale(roots, error), roots,
                       error, caller_frame());
    } catch (const std::exception &e) {
      message = std::string("ddpguard: in-place write hazard on rank ") +
                std::to_string(explainer_rank.load()) +
                ": ddpguard could not inspect the graph (" + e.what() +
                "); autograd's error follows.\n";
    }
    remember_report(message);
    std::fputs(message.c_str(), stderr);
    std::fflush(stderr);
  }
};

} // namespace

} // namespace ddpguard::detail

void ddpguard::explain_inplace_errors(int rank) {
  detail::explainer_rank.store(rank);
  static std::once_flag installed;
  std::call_once(installed, [] {
    torch::autograd::set_default_engine_stub(&detail::ExplainingEngine::get);
  });
}
