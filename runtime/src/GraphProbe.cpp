#include "GraphProbe.h"

#include <ddpguard/runtime/DistributedDataParallel.h>

#include <c10/util/Backtrace.h>
#include <torch/csrc/dynamo/compiled_autograd.h>

#include <atomic>
#include <mutex>
#include <sstream>
#include <unordered_set>

namespace ddpguard::detail {

ProbeResult probe(const NodePtr &node) {
  namespace ca = torch::dynamo::autograd;
  ca::AutogradCompilerCall call(ca::SizeInput::STATIC);
  ca::NodeCall node_call(0, node);
  ProbeResult result;
  try {
    ca::CompiledNodeArgs args(call, node_call);
    node->compiled_args(args);
  } catch (const c10::NotImplementedError &e) {
    result.kind = Probe::kUninspectable;
    result.message = e.what_without_backtrace();
  } catch (const c10::Error &e) {
    result.message = e.what_without_backtrace();
    if (result.message.find("modified by an inplace operation") !=
        std::string::npos)
      result.kind = Probe::kStale;
    else if (result.message.find("backward through the graph a second time") !=
             std::string::npos)
      result.kind = Probe::kFreed;
    else
      result.kind = Probe::kUninspectable;
  } catch (const std::exception &e) {
    result.kind = Probe::kUninspectable;
    result.message = e.what();
  }
  result.unpacked = std::move(call.tensor_args.inputs);
  return result;
}

void walk_graph(std::vector<NodePtr> roots,
                const std::function<bool(const NodePtr &)> &visit) {
  std::unordered_set<const torch::autograd::Node *> seen;
  std::vector<NodePtr> stack;
  for (auto &root : roots)
    if (root && seen.insert(root.get()).second)
      stack.push_back(std::move(root));
  while (!stack.empty()) {
    auto node = std::move(stack.back());
    stack.pop_back();
    if (!visit(node))
      continue;
    for (const auto &edge : node->next_edges())
      if (edge.function && seen.insert(edge.function.get()).second)
        stack.push_back(edge.function);
  }
}

uint32_t version_of(const at::Tensor &t) {
  const auto &counter = t.unsafeGetTensorImpl()->version_counter();
  return counter.enabled() ? counter.current_version() : 0u;
}

bool aliases(const at::Tensor &saved, const at::Tensor &tensor) {
  return saved.defined() && saved.has_storage() && tensor.has_storage() &&
         saved.is_alias_of(tensor);
}

VersionRollback::~VersionRollback() {
  for (auto it = restore_.rbegin(); it != restore_.rend(); ++it)
    it->first.set_version(it->second);
}

void VersionRollback::roll_back(const at::Tensor &tensor, uint32_t version) {
  c10::VariableVersion counter = tensor.unsafeGetTensorImpl()->version_counter();
  if (!counter.enabled())
    return;
  const uint32_t now = counter.current_version();
  if (now == version)
    return;
  counter.set_version(version);
  restore_.emplace_back(std::move(counter), now);
}

std::string stale_tensor_description(const std::string &message) {
  const auto from = message.find('[');
  const auto to = message.find(" instead", from);
  if (from == std::string::npos || to == std::string::npos)
    return message;
  return message.substr(from, to - from);
}

std::string caller_frame() {
  std::istringstream frames(c10::get_backtrace(/*frames_to_skip=*/1,
                                               /*maximum_number_of_frames=*/64,
                                               /*skip_python_frames=*/true));
  static const char *const kInternal[] = {
      "libtorch", "libc10", "libc.so", "libstdc++", "ddpguard::detail",
      "ddpguard::DistributedDataParallel", "torch::autograd", "c10::",
      "at::", "std::", "OutputNodeHook", "get_backtrace", "caller_frame"};
  for (std::string line; std::getline(frames, line);) {
    if (line.find("frame #") == std::string::npos)
      continue;
    bool internal = false;
    for (const char *k : kInternal)
      internal = internal || line.find(k) != std::string::npos;
    if (!internal) {
      auto colon = line.find(": ");
      std::string frame = colon == std::string::npos ? line : line.substr(colon + 2);
      // A function the binary does not export names nothing a reader can use.
      return frame.rfind("<unknown function>", 0) == 0 ? "" : frame;
    }
  }
  return "";
}

const char *const kWriteFixes =
    "  Fixes:\n"
    "    1. write after the last backward through this graph (e.g. "
    "optimizer.step() after every backward that traverses the stepped "
    "module's graph);\n"
    "    2. run the forward again after the write, so the backward uses "
    "what was written;\n"
    "    3. for an in-place op on a value the graph saved, its "
    "out-of-place form (y = y.mul(2), not y.mul_(2)).\n";

namespace {
std::mutex latest_report_mutex;
std::string latest_report;
std::atomic<uint64_t> report_count{0};
} // namespace

void remember_report(const std::string &report) {
  std::lock_guard<std::mutex> lock(latest_report_mutex);
  latest_report = report;
  ++report_count;
}

uint64_t reports_so_far() { return report_count.load(); }

} // namespace ddpguard::detail

std::string ddpguard::latest_hazard_report() {
  std::lock_guard<std::mutex> lock(detail::latest_report_mutex);
  return detail::latest_report;
}
