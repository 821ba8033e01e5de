#include "HazardDetector.h"

#include <torch/csrc/autograd/function_hook.h>

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace ddpguard::detail {

struct HazardDetector::Hazard {
  HazardAction action;
  int rank;
  CallSite first;
  std::vector<CallSite> clobbering;
  std::vector<std::string> buffers;
  std::mutex mutex;
  bool reported = false;

  std::string message() {
    std::ostringstream os;
    auto where = [](const CallSite &s) {
      std::ostringstream w;
      w << s.file << ":" << s.line;
      if (s.function && *s.function)
        w << " (in " << s.function << ")";
      return w.str();
    };
    os << "ddpguard: DistributedDataParallel hazard on rank " << rank
       << ": several forwards before one backward.\n"
       << "  forward at " << where(first)
       << " ran with grad mode on; its graph saved module buffers for backward.\n";
    for (const auto &c : clobbering)
      os << "  forward at " << where(c)
         << " then broadcast the buffers from rank 0 in place "
            "(broadcast_buffers=true), bumping their version counters:\n";
    os << "   ";
    for (const auto &b : buffers)
      os << " " << b;
    os << "\n  This backward traverses the graph of the forward at "
       << first.file << ":" << first.line
       << ", so autograd rejects it (\"one of the variables needed for gradient "
          "computation has been modified by an inplace operation\").\n"
       << "  Fixes:\n"
       << "    1. DDPOptions().broadcast_buffers(false): buffers are no longer "
          "synchronised; each rank keeps its own running statistics;\n"
       << "    2. one DDP forward for all inputs: auto [o1, o2] = "
          "ddp.forward_group(x1, x2); (one broadcast, keeps buffer sync);\n"
       << "    3. DDPOptions().buffer_broadcast(ddpguard::BufferBroadcast::"
          "kOncePerBackward): broadcast only on the first forward after a "
          "backward.\n";
    return os.str();
  }
};

namespace {

std::mutex latest_report_mutex;
std::string latest_report;

void remember_report(const std::string &report) {
  std::lock_guard<std::mutex> lock(latest_report_mutex);
  latest_report = report;
}

class HazardPreHook : public torch::autograd::FunctionPreHook {
public:
  explicit HazardPreHook(std::shared_ptr<HazardDetector::Hazard> hazard)
      : hazard_(std::move(hazard)) {}
  torch::autograd::variable_list
  operator()(const torch::autograd::variable_list &grads) override {
    std::string message;
    {
      std::lock_guard<std::mutex> lock(hazard_->mutex);
      if (hazard_->action == HazardAction::kWarn && hazard_->reported)
        return grads;
      hazard_->reported = true;
      message = hazard_->message();
    }
    remember_report(message);
    if (hazard_->action == HazardAction::kThrow)
      throw HazardError(message);
    std::fputs(message.c_str(), stderr);
    std::fflush(stderr);
    return grads;
  }

private:
  std::shared_ptr<HazardDetector::Hazard> hazard_;
};

} // namespace

HazardDetector::HazardDetector(HazardAction action, int rank)
    : action_(action), rank_(rank) {}

void HazardDetector::on_grad_forward(const std::vector<at::Tensor> &outputs,
                                     const CallSite &site) {
  Record record{site, {}, nullptr};
  for (const auto &out : outputs)
    if (auto fn = out.grad_fn())
      record.roots.push_back(fn);
  if (record.roots.empty())
    return;
  std::lock_guard<std::mutex> lock(mutex_);
  // Records whose graphs are gone can never be traversed again.
  records_.erase(std::remove_if(records_.begin(), records_.end(),
                                [](const Record &r) {
                                  for (const auto &root : r.roots)
                                    if (!root.expired())
                                      return false;
                                  return true;
                                }),
                 records_.end());
  records_.push_back(std::move(record));
}

void HazardDetector::on_broadcast(const CallSite &site,
                                  std::vector<std::string> buffers) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto &record : records_) {
    std::vector<std::shared_ptr<torch::autograd::Node>> alive;
    for (const auto &root : record.roots)
      if (auto node = root.lock())
        alive.push_back(std::move(node));
    if (alive.empty())
      continue; // outputs dropped: nothing can backward through that graph
    if (!record.hazard) {
      record.hazard = std::make_shared<Hazard>();
      record.hazard->action = action_;
      record.hazard->rank = rank_;
      record.hazard->first = record.site;
      record.hazard->buffers = buffers;
      for (auto &node : alive)
        node->add_pre_hook(std::make_unique<HazardPreHook>(record.hazard));
    }
    std::lock_guard<std::mutex> hazard_lock(record.hazard->mutex);
    record.hazard->clobbering.push_back(site);
  }
}

void HazardDetector::on_backward() {
  std::lock_guard<std::mutex> lock(mutex_);
  records_.clear();
}

} // namespace ddpguard::detail

std::string ddpguard::latest_hazard_report() {
  std::lock_guard<std::mutex> lock(detail::latest_report_mutex);
  return detail::latest_report;
}
