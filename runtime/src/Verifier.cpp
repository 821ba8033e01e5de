// Verification mode: cross-rank checks of gradients, parameters and buffers
// by hashes and one allgather per check, progress lines and a JSON summary
// per rank. See Verifier.h for when each check runs, docs/verifier.md for the
// user's side.
#include "Verifier.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/grad_mode.h>
#include <torch/csrc/distributed/c10d/comm.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <strings.h>
#include <thread>
#include <unistd.h>

namespace ddpguard {
namespace {

bool env_flag(const char *name) {
  const char *v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0 && strcasecmp(v, "false") != 0 &&
         strcasecmp(v, "off") != 0 && strcasecmp(v, "no") != 0;
}

std::mutex label_mutex;
std::string pending_label;
int instances = 0;

std::string take_label() {
  std::lock_guard<std::mutex> lock(label_mutex);
  std::string label = pending_label.empty()
                          ? "ddp#" + std::to_string(instances)
                          : pending_label;
  ++instances;
  return label;
}

} // namespace

bool verify_enabled() { return env_flag("DDPGUARD_VERIFY"); }

void set_verify_label(const std::string &label) {
  std::lock_guard<std::mutex> lock(label_mutex);
  pending_label = label;
}

namespace detail {
namespace {

using Clock = std::chrono::steady_clock;

// ---------------------------------------------------------------------------
// The summary: what every DDP of this process checked, written as JSON.

struct CheckRecord {
  std::string kind; // gradients | parameters | buffers
  std::string mode; // buffers: synchronised | measured
  size_t tensors = 0;
  bool identical = true;
  double max_abs = 0;
  double max_rel = 0;
  std::string tensor; // where max_abs was found (or the first mismatch)
  int rank = -1;
};

struct StepRecord {
  int64_t step = 0; // -1: before the first step (the initial check)
  std::vector<CheckRecord> checks;
};

struct Divergence {
  std::string kind;
  int64_t step = 0;
  int rank = -1;
  std::string tensor;
  double max_abs = NAN;
  double max_rel = NAN;
  std::string message;
};

constexpr size_t kMaxStepRecords = 10000;

struct Entry {
  std::string label;
  std::string device;
  bool broadcast_buffers = true;
  std::string buffer_policy;
  size_t parameters = 0;
  size_t buffers = 0;
  int64_t steps_completed = 0;
  int64_t checks = 0;
  double max_gradient_divergence = 0;
  double max_parameter_divergence = 0;
  CheckRecord max_buffer; // the largest measured divergence
  double verify_seconds = 0;
  uint64_t hashed_bytes = 0;
  std::vector<StepRecord> steps;
  bool steps_truncated = false;
  bool finished = false;
  std::unique_ptr<Divergence> divergence;
};

std::string json_string(const std::string &text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    switch (c) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\n': out += "\\n"; break;
    case '\r': out += "\\r"; break;
    case '\t': out += "\\t"; break;
    default:
      if (c < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out += buf;
      } else {
        out += static_cast<char>(c);
      }
    }
  }
  return out + "\"";
}

std::string json_number(double v) {
  if (!std::isfinite(v))
    return "null";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

void write_check(std::ostream &os, const CheckRecord &c) {
  os << "{\"kind\": " << json_string(c.kind);
  if (!c.mode.empty())
    os << ", \"mode\": " << json_string(c.mode);
  os << ", \"tensors\": " << c.tensors << ", \"identical\": "
     << (c.identical ? "true" : "false") << ", \"max_abs\": " << json_number(c.max_abs);
  if (c.kind == "buffers")
    os << ", \"max_rel\": " << json_number(c.max_rel);
  if (!c.tensor.empty())
    os << ", \"tensor\": " << json_string(c.tensor) << ", \"rank\": " << c.rank;
  os << "}";
}

class Registry {
public:
  static Registry &get() {
    static Registry *registry = new Registry; // never destroyed: used at exit
    return *registry;
  }

  void configure(int rank, int world, const std::string &backend) {
    std::lock_guard<std::mutex> lock(mutex_);
    rank_ = rank;
    world_ = world;
    backend_ = backend;
    progress_ = env_flag("DDPGUARD_VERIFY_PROGRESS");
    const char *path = std::getenv("DDPGUARD_VERIFY_JSON");
    json_path_ = path ? rank_path(path, rank) : "";
    static const bool hooks = [] {
      previous_terminate_ = std::set_terminate(on_terminate);
      std::atexit([] { Registry::get().at_exit(); });
      return true;
    }();
    (void)hooks;
  }

  std::shared_ptr<Entry> add(std::shared_ptr<Entry> entry) {
    std::lock_guard<std::mutex> lock(mutex_);
    entries_.push_back(entry);
    return entry;
  }

  bool progress() const { return progress_; }
  std::mutex &mutex() { return mutex_; }

  // Writes the summary now (`force`) or if a second has passed since the
  // last write. The caller holds mutex().
  void write_locked(bool force) {
    if (json_path_.empty())
      return;
    const auto now = Clock::now();
    if (!force && written_ && now - last_write_ < std::chrono::seconds(1))
      return;
    written_ = true;
    last_write_ = now;
    if (!made_directory_) {
      made_directory_ = true;
      std::error_code ignored;
      const auto parent = std::filesystem::path(json_path_).parent_path();
      if (!parent.empty())
        std::filesystem::create_directories(parent, ignored);
    }
    const std::string tmp = json_path_ + ".tmp" + std::to_string(::getpid());
    {
      std::ofstream os(tmp, std::ios::trunc);
      write_json(os);
      if (!os.flush())
        return;
    }
    std::rename(tmp.c_str(), json_path_.c_str());
  }

  void write(bool force) {
    std::lock_guard<std::mutex> lock(mutex_);
    write_locked(force);
  }

private:
  static std::string rank_path(std::string path, int rank) {
    const auto at = path.find("%r");
    if (at != std::string::npos)
      return path.replace(at, 2, std::to_string(rank));
    const std::string ext = ".json";
    if (path.size() > ext.size() &&
        path.compare(path.size() - ext.size(), ext.size(), ext) == 0)
      return path.substr(0, path.size() - ext.size()) + ".rank" +
             std::to_string(rank) + ext;
    return path + ".rank" + std::to_string(rank);
  }

  std::string status_locked() const {
    if (!failure_status_.empty())
      return failure_status_;
    for (const auto &e : entries_)
      if (e->divergence)
        return "diverged";
    if (!latest_hazard_report().empty())
      return "hazard";
    if (exiting_)
      return "ok";
    for (const auto &e : entries_)
      if (!e->finished)
        return "running";
    return "ok";
  }

  void write_json(std::ostream &os) const {
    os << "{\n  \"format\": \"ddpguard-verify/1\",\n  \"rank\": " << rank_
       << ",\n  \"world_size\": " << world_ << ",\n  \"backend\": "
       << json_string(backend_) << ",\n  \"status\": " << json_string(status_locked());
    if (!failure_message_.empty())
      os << ",\n  \"error\": " << json_string(failure_message_);
    const std::string report = latest_hazard_report();
    if (!report.empty())
      os << ",\n  \"hazard_report\": " << json_string(report);
    os << ",\n  \"ddp\": [";
    for (size_t i = 0; i < entries_.size(); ++i) {
      const Entry &e = *entries_[i];
      os << (i ? ",\n" : "\n") << "    {\"label\": " << json_string(e.label)
         << ", \"device\": " << json_string(e.device)
         << ", \"broadcast_buffers\": " << (e.broadcast_buffers ? "true" : "false")
         << ", \"buffer_broadcast\": " << json_string(e.buffer_policy)
         << ", \"parameters\": " << e.parameters << ", \"buffers\": " << e.buffers
         << ",\n     \"steps_completed\": " << e.steps_completed
         << ", \"checks\": " << e.checks
         << ", \"max_gradient_divergence\": " << json_number(e.max_gradient_divergence)
         << ", \"max_parameter_divergence\": " << json_number(e.max_parameter_divergence)
         << ",\n     \"max_buffer_divergence\": ";
      write_check(os, e.max_buffer);
      os << ",\n     \"verify_seconds\": " << json_number(e.verify_seconds)
         << ", \"hashed_bytes\": " << e.hashed_bytes
         << ", \"finished\": " << (e.finished ? "true" : "false");
      if (e.divergence) {
        const Divergence &d = *e.divergence;
        os << ",\n     \"divergence\": {\"kind\": " << json_string(d.kind)
           << ", \"step\": " << d.step << ", \"rank\": " << d.rank
           << ", \"tensor\": " << json_string(d.tensor)
           << ", \"max_abs\": " << json_number(d.max_abs)
           << ", \"max_rel\": " << json_number(d.max_rel)
           << ", \"message\": " << json_string(d.message) << "}";
      }
      os << ",\n     \"steps_truncated\": " << (e.steps_truncated ? "true" : "false")
         << ",\n     \"steps\": [";
      for (size_t s = 0; s < e.steps.size(); ++s) {
        const StepRecord &step = e.steps[s];
        double grad = 0, param = 0, buf_abs = 0, buf_rel = 0;
        for (const auto &c : step.checks) {
          if (c.kind == "gradients")
            grad = std::max(grad, c.max_abs);
          else if (c.kind == "parameters")
            param = std::max(param, c.max_abs);
          else {
            buf_abs = std::max(buf_abs, c.max_abs);
            buf_rel = std::max(buf_rel, c.max_rel);
          }
        }
        os << (s ? ",\n" : "\n") << "       {\"step\": " << step.step
           << ", \"max_divergence\": {\"gradients\": " << json_number(grad)
           << ", \"parameters\": " << json_number(param)
           << ", \"buffers_abs\": " << json_number(buf_abs)
           << ", \"buffers_rel\": " << json_number(buf_rel) << "}, \"checks\": [";
        for (size_t c = 0; c < step.checks.size(); ++c) {
          os << (c ? ", " : "");
          write_check(os, step.checks[c]);
        }
        os << "]}";
      }
      os << (e.steps.empty() ? "]}" : "\n     ]}");
    }
    os << (entries_.empty() ? "]\n}\n" : "\n  ]\n}\n");
  }

  // An uncaught exception (a divergence, a hazard, any error) ends a rank:
  // the summary says why, then the previous handler (the runtime's error
  // recorder for torchrun) runs.
  [[noreturn]] static void on_terminate() {
    std::string status = "error", message;
    if (auto current = std::current_exception()) {
      try {
        std::rethrow_exception(current);
      } catch (const VerificationError &e) {
        status = "diverged";
        message = e.what();
      } catch (const HazardError &e) {
        status = "hazard";
        message = e.what();
      } catch (const c10::Error &e) {
        message = e.what_without_backtrace();
      } catch (const std::exception &e) {
        message = e.what();
      } catch (...) {
        message = "unknown exception";
      }
      message = "uncaught exception: " + message;
    } else {
      message = "std::terminate called without an active exception";
    }
    if (status == "error" && !latest_hazard_report().empty())
      status = "hazard";
    Registry &r = get();
    // Another thread may hold the lock (or this one, if it failed inside a
    // write): wait a little, never forever.
    std::unique_lock<std::mutex> lock(r.mutex_, std::defer_lock);
    for (int i = 0; i < 100 && !lock.try_lock(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (lock.owns_lock()) {
      r.failure_status_ = status;
      r.failure_message_ = message;
      r.write_locked(true);
    }
    if (previous_terminate_)
      previous_terminate_();
    std::abort();
  }

  void at_exit() {
    std::lock_guard<std::mutex> lock(mutex_);
    exiting_ = true;
    write_locked(true);
  }

  static inline std::terminate_handler previous_terminate_ = nullptr;

  std::mutex mutex_;
  std::vector<std::shared_ptr<Entry>> entries_;
  int rank_ = 0;
  int world_ = 1;
  std::string backend_;
  bool progress_ = false;
  std::string json_path_;
  bool written_ = false;
  bool made_directory_ = false;
  bool exiting_ = false;
  Clock::time_point last_write_;
  std::string failure_status_;
  std::string failure_message_;
};

// ---------------------------------------------------------------------------
// The exchange: one int64 row per rank.
//
//   [0] magic  [1] kind  [2] step  [3] P  [4] B  [5] buffer mode
//   [6, 6+P)            hashes of the P parameters (or their gradients)
//   [6+P, 6+P+B)        hashes of the B buffers
//   [6+P+B, 6+P+2B)     measured |buffer - rank 0's| max (double bits)
//   [6+P+2B, 6+P+3B)    the same relative to rank 0's max |buffer|

constexpr int64_t kMagic = 0x6464707665726966; // "ddpverif"
constexpr size_t kHeader = 6;
enum Kind : int64_t { kInitial = 1, kGradients = 2, kParameters = 3, kFinal = 4 };
enum BufferMode : int64_t { kNoBuffers = 0, kSynchronised = 1, kMeasured = 2 };

const char *kind_name(int64_t kind) {
  switch (kind) {
  case kInitial: return "the initial parameters";
  case kGradients: return "gradients";
  case kParameters: return "parameters";
  case kFinal: return "final parameters";
  default: return "unknown check";
  }
}

int64_t double_bits(double v) {
  int64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return bits;
}
double bits_double(int64_t bits) {
  double v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string step_text(int64_t step) {
  return step < 0 ? "before the first step" : "at step " + std::to_string(step);
}

} // namespace

struct Verifier::State : std::enable_shared_from_this<Verifier::State> {
  torch::nn::Module &module;
  ProcessGroupPtr pg;
  int rank;
  int world;
  at::Device device;
  std::vector<std::string> param_names;
  std::vector<at::Tensor> params;
  std::shared_ptr<Entry> entry;
  bool progress;
  bool broadcast_buffers = true;
  double step_seconds = 0; // verification time since the last progress line

  std::mutex mutex;                    // one check at a time
  std::atomic<bool> sync_pending{false}; // the next backward synchronises
  std::atomic<bool> queued{false};       // an end-of-backward callback is queued
  int64_t steps = 0;                   // completed gradient checks
  bool state_due = false;              // a gradient check without a state check since
  bool initial_done = false;
  bool failed = false;
  std::string progress_gradients;      // the gradient part of the next progress line

  State(torch::nn::Module &m, ProcessGroupPtr group, at::Device dev)
      : module(m), pg(std::move(group)), rank(pg->getRank()),
        world(pg->getSize()), device(dev) {}

  std::vector<std::vector<int64_t>> gather(const std::vector<int64_t> &row,
                                           int64_t kind, int64_t step) {
    const auto options = at::TensorOptions().dtype(at::kLong);
    at::Tensor input = at::tensor(row, options).to(device);
    std::vector<at::Tensor> inputs{input};
    std::vector<std::vector<at::Tensor>> outputs(1);
    for (int r = 0; r < world; ++r)
      outputs[0].push_back(at::empty_like(input));
    try {
      pg->allgather(outputs, inputs)->wait();
    } catch (const std::exception &e) {
      const std::string cause = [&] {
        if (auto *c10 = dynamic_cast<const c10::Error *>(&e))
          return std::string(c10->what_without_backtrace());
        return std::string(e.what());
      }();
      throw std::runtime_error(
          "ddpguard-verify: the exchange of " + std::string(kind_name(kind)) +
          " hashes " + step_text(step) + " failed on rank " + std::to_string(rank) +
          " of " + std::to_string(world) + " (" + pg->getBackendName() + "): " + cause +
          "\n  likely causes: a rank died or exited early, a rank hangs, or the "
          "ranks run different programs or models");
    }
    std::vector<std::vector<int64_t>> rows;
    for (const auto &t : outputs[0]) {
      const at::Tensor host = t.cpu();
      const auto *p = host.const_data_ptr<int64_t>();
      rows.emplace_back(p, p + host.numel());
    }
    return rows;
  }

  // Every rank's max |t - rank 0's t| and that relative to max |rank 0's t|,
  // by a broadcast of rank 0's copy. Only after the hashes differed.
  std::vector<std::pair<double, double>> measure(const at::Tensor &t) {
    at::NoGradGuard no_grad;
    at::Tensor mine = t.detach();
    at::Tensor reference = mine.clone();
    std::vector<at::Tensor> tensors{reference};
    pg->broadcast(tensors)->wait();
    const at::Tensor a = mine.to(at::kDouble), b = reference.to(at::kDouble);
    const double abs = (a - b).abs().max().item<double>();
    const double scale = b.abs().max().item<double>();
    const double rel = scale > 0 ? abs / scale : (abs > 0 ? INFINITY : 0.0);
    std::vector<int64_t> row{kMagic, 0, 0, 0, 0, 0, double_bits(abs), double_bits(rel)};
    const auto rows = gather(row, 0, -1);
    std::vector<std::pair<double, double>> out;
    for (const auto &r : rows)
      out.emplace_back(bits_double(r[6]), bits_double(r[7]));
    return out;
  }

  // Throws VerificationError for the first tensor (in order) whose hash on
  // some rank differs from rank 0's; all ranks hold the same rows, so all of
  // them throw the same message.
  void compare(const std::vector<std::vector<int64_t>> &rows, int64_t kind,
               int64_t step, size_t offset, const std::vector<std::string> &names,
               const std::vector<at::Tensor> &tensors, const char *what,
               CheckRecord &record) {
    struct Mismatch {
      size_t index;
      int rank;
    };
    std::vector<Mismatch> mismatches;
    for (size_t i = 0; i < names.size(); ++i)
      for (int r = 1; r < world; ++r)
        if (rows[r][offset + i] != rows[0][offset + i]) {
          mismatches.push_back({i, r});
          break;
        }
    if (mismatches.empty())
      return;
    const Mismatch first = mismatches.front();
    const uint64_t h0 = static_cast<uint64_t>(rows[0][offset + first.index]);
    const uint64_t hr = static_cast<uint64_t>(rows[first.rank][offset + first.index]);
    double abs = NAN, rel = NAN;
    std::string magnitude;
    bool all_defined = true;
    for (int r = 0; r < world; ++r)
      all_defined = all_defined && rows[r][offset + first.index] != 0;
    if (all_defined) {
      const auto measured = measure(tensors[first.index]);
      abs = measured[first.rank].first;
      rel = measured[first.rank].second;
      std::ostringstream os;
      os << "max abs difference " << abs << ", relative " << rel << "; ";
      magnitude = os.str();
    } else {
      magnitude = std::string(h0 == 0 ? "undefined on rank 0" : "undefined on rank " +
                                                                    std::to_string(first.rank)) +
                  "; ";
    }
    std::ostringstream os;
    os << "ddpguard-verify: the ranks diverged " << step_text(step) << ": "
       << (kind == kGradients ? "the gradient of " : "") << what << " '"
       << names[first.index] << "' on rank " << first.rank
       << " differs from rank 0";
    if (kind == kParameters || kind == kFinal)
      os << " after the optimizer step";
    else if (kind == kGradients)
      os << " after the synchronised backward";
    os << " (" << magnitude << "hash " << hex(hr) << " on rank " << first.rank
       << ", " << hex(h0) << " on rank 0)";
    if (mismatches.size() > 1) {
      os << "; " << mismatches.size() << " of " << names.size() << " "
         << (kind == kGradients ? "gradient" : what) << "s differ:";
      for (size_t k = 0; k < mismatches.size() && k < 8; ++k)
        os << (k ? ", " : " ") << names[mismatches[k].index] << " (rank "
           << mismatches[k].rank << ")";
      if (mismatches.size() > 8)
        os << ", ...";
    }
    os << " [" << entry->label << ", checked on rank " << rank << "]";
    record.identical = false;
    record.max_abs = abs;
    record.tensor = names[first.index];
    record.rank = first.rank;
    fail(os.str(), record.kind, step, first.rank, names[first.index], abs, rel);
  }

  [[noreturn]] void fail(const std::string &message, const std::string &kind,
                         int64_t step,
                         int bad_rank, const std::string &tensor, double abs,
                         double rel) {
    failed = true;
    {
      Registry &registry = Registry::get();
      std::lock_guard<std::mutex> lock(registry.mutex());
      auto d = std::make_unique<Divergence>();
      d->kind = kind;
      d->step = step;
      d->rank = bad_rank;
      d->tensor = tensor;
      d->max_abs = abs;
      d->max_rel = rel;
      d->message = message;
      entry->divergence = std::move(d);
      registry.write_locked(true);
    }
    if (progress) {
      std::fprintf(stderr, "ddpguard-verify: rank %d %s %s: DIVERGED: %s\n", rank,
                   entry->label.c_str(), step_text(step).c_str(),
                   tensor.empty() ? "ranks out of step" : tensor.c_str());
      std::fflush(stderr);
    }
    throw VerificationError(message, bad_rank, step, tensor);
  }

  void check_headers(const std::vector<std::vector<int64_t>> &rows, int64_t kind,
                     int64_t step) {
    for (int r = 1; r < world; ++r) {
      bool same = rows[r].size() == rows[0].size();
      for (size_t i = 0; same && i < kHeader; ++i)
        same = rows[r][i] == rows[0][i];
      if (same)
        continue;
      auto describe = [](const std::vector<int64_t> &row) {
        std::ostringstream os;
        if (row.size() < kHeader || row[0] != kMagic)
          return std::string("not verifying");
        os << "at the " << kind_name(row[1]) << " check " << step_text(row[2])
           << " with " << row[3] << " parameters and " << row[4] << " buffers";
        return os.str();
      };
      std::ostringstream os;
      os << "ddpguard-verify: the ranks are out of step " << step_text(step)
         << ": rank " << r << " is " << describe(rows[r]) << ", rank 0 is "
         << describe(rows[0])
         << " (they ran different numbers of forwards or backwards, or "
            "different models) [" << entry->label << "]";
      fail(os.str(), "out of step", step, r, "", NAN, NAN);
    }
    (void)kind;
  }

  std::vector<int64_t> header(int64_t kind, int64_t step, size_t p, size_t b,
                              int64_t mode) {
    return {kMagic, kind, step, static_cast<int64_t>(p), static_cast<int64_t>(b), mode};
  }

  uint64_t bytes_of(const std::vector<at::Tensor> &tensors) {
    uint64_t n = 0;
    for (const auto &t : tensors)
      if (t.defined())
        n += static_cast<uint64_t>(t.numel()) * t.element_size();
    return n;
  }

  void add_record(int64_t step, CheckRecord record) {
    ++entry->checks;
    if (!entry->steps.empty() && entry->steps.back().step == step) {
      entry->steps.back().checks.push_back(std::move(record));
      return;
    }
    if (entry->steps.size() >= kMaxStepRecords) {
      entry->steps_truncated = true;
      return;
    }
    entry->steps.push_back(StepRecord{step, {std::move(record)}});
  }

  // The end of a synchronised backward: every rank's gradients must be the
  // same bits (c10d::Reducer's allreduce gave them all the same average).
  void check_gradients() {
    std::lock_guard<std::mutex> lock(mutex);
    if (failed)
      return;
    const auto start = Clock::now();
    at::NoGradGuard no_grad;
    const int64_t step = steps;
    std::vector<at::Tensor> grads;
    for (const auto &p : params)
      grads.push_back(p.grad().defined() ? p.grad().detach() : at::Tensor());
    auto row = header(kGradients, step, params.size(), 0, kNoBuffers);
    for (uint64_t h : hash_tensors(grads))
      row.push_back(static_cast<int64_t>(h));
    const auto rows = gather(row, kGradients, step);
    check_headers(rows, kGradients, step);
    CheckRecord record;
    record.kind = "gradients";
    record.tensors = params.size();
    compare(rows, kGradients, step, kHeader, param_names, grads, "parameter", record);
    ++steps;
    state_due = true;
    progress_gradients = "gradients " + std::to_string(params.size()) + " identical";
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    step_seconds += seconds;
    Registry &registry = Registry::get();
    std::lock_guard<std::mutex> registry_lock(registry.mutex());
    entry->steps_completed = steps;
    entry->verify_seconds += seconds;
    entry->hashed_bytes += bytes_of(grads);
    add_record(step, std::move(record));
  }

  // Parameters (all of them) and buffers, after the optimizer step of the
  // last checked step (or before the first one).
  void check_state(int64_t kind, bool broadcast) {
    std::lock_guard<std::mutex> lock(mutex);
    if (failed)
      return;
    const auto start = Clock::now();
    at::NoGradGuard no_grad;
    const int64_t step = kind == kInitial ? -1 : steps - 1;
    std::vector<std::string> buffer_names;
    std::vector<at::Tensor> buffers;
    // After the last forward, synchronised buffers hold each rank's own
    // updates since the broadcast (as in PyTorch; the next forward would
    // broadcast again): only rank-local buffers are measured then.
    if (kind != kFinal || !broadcast_buffers)
      for (const auto &item : module.named_buffers(/*recurse=*/true)) {
        buffer_names.push_back(item.key());
        buffers.push_back(item.value().detach());
      }
    const int64_t mode = buffers.empty() ? kNoBuffers
                         : broadcast     ? kSynchronised
                                         : kMeasured;
    // Measured buffers: rank 0's values come by one coalesced broadcast.
    std::vector<double> abs(buffers.size(), 0.0), rel(buffers.size(), 0.0);
    if (mode == kMeasured) {
      std::vector<at::Tensor> reference;
      for (const auto &b : buffers)
        reference.push_back(b.clone());
      try {
        c10d::broadcast_coalesced(pg, reference, 256 * 1024 * 1024, 0);
      } catch (const std::exception &e) {
        throw std::runtime_error("ddpguard-verify: broadcasting rank 0's buffers " +
                                 step_text(step) + " to measure their divergence failed on rank " +
                                 std::to_string(rank) + ": " + e.what());
      }
      for (size_t i = 0; i < buffers.size(); ++i) {
        const at::Tensor a = buffers[i].to(at::kDouble), b = reference[i].to(at::kDouble);
        if (a.numel() == 0)
          continue;
        abs[i] = (a - b).abs().max().item<double>();
        const double scale = b.abs().max().item<double>();
        rel[i] = scale > 0 ? abs[i] / scale : (abs[i] > 0 ? INFINITY : 0.0);
      }
    }
    std::vector<at::Tensor> all = params;
    for (auto &p : all)
      p = p.detach();
    all.insert(all.end(), buffers.begin(), buffers.end());
    const auto hashes = hash_tensors(all);
    auto row = header(kind, step, params.size(), buffers.size(), mode);
    for (uint64_t h : hashes)
      row.push_back(static_cast<int64_t>(h));
    for (double v : abs)
      row.push_back(double_bits(v));
    for (double v : rel)
      row.push_back(double_bits(v));
    const auto rows = gather(row, kind, step);
    check_headers(rows, kind, step);

    CheckRecord params_record;
    params_record.kind = "parameters";
    params_record.tensors = params.size();
    std::vector<at::Tensor> param_tensors(all.begin(), all.begin() + params.size());
    compare(rows, kind, step, kHeader, param_names, param_tensors, "parameter",
            params_record);

    CheckRecord buffer_record;
    buffer_record.kind = "buffers";
    buffer_record.tensors = buffers.size();
    std::string buffer_text;
    if (mode == kSynchronised) {
      buffer_record.mode = "synchronised";
      compare(rows, kind, step, kHeader + params.size(), buffer_names, buffers,
              "buffer", buffer_record);
      buffer_text = "buffers " + std::to_string(buffers.size()) +
                    " identical (broadcast from rank 0)";
    } else if (mode == kMeasured) {
      buffer_record.mode = "measured";
      const size_t base = kHeader + params.size() + buffers.size();
      for (int r = 0; r < world; ++r)
        for (size_t i = 0; i < buffers.size(); ++i) {
          const double a = bits_double(rows[r][base + i]);
          const double rl = bits_double(rows[r][base + buffers.size() + i]);
          if (rows[r][kHeader + params.size() + i] != rows[0][kHeader + params.size() + i])
            buffer_record.identical = false;
          if (a > buffer_record.max_abs || (buffer_record.tensor.empty() && a > 0)) {
            buffer_record.max_abs = a;
            buffer_record.tensor = buffer_names[i];
            buffer_record.rank = r;
          }
          buffer_record.max_rel = std::max(buffer_record.max_rel, rl);
        }
      std::ostringstream os;
      os << "buffers " << buffers.size() << " not synchronised: ";
      if (buffer_record.identical)
        os << "identical";
      else
        os << "max divergence from rank 0 abs " << buffer_record.max_abs << " rel "
           << buffer_record.max_rel << " (" << buffer_record.tensor << " on rank "
           << buffer_record.rank << ")";
      buffer_text = os.str();
    }

    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    step_seconds += seconds;
    if (kind != kInitial)
      state_due = false;
    {
      Registry &registry = Registry::get();
      std::lock_guard<std::mutex> registry_lock(registry.mutex());
      entry->verify_seconds += seconds;
      entry->hashed_bytes += bytes_of(all);
      if (mode == kMeasured && buffer_record.max_abs >= entry->max_buffer.max_abs) {
        const double max_rel = std::max(entry->max_buffer.max_rel, buffer_record.max_rel);
        entry->max_buffer = buffer_record;
        entry->max_buffer.max_rel = max_rel;
      } else if (mode == kMeasured) {
        entry->max_buffer.max_rel = std::max(entry->max_buffer.max_rel, buffer_record.max_rel);
      }
      if (entry->max_buffer.kind.empty()) {
        entry->max_buffer.kind = "buffers";
        entry->max_buffer.mode = "measured";
      }
      add_record(step, std::move(params_record));
      if (mode != kNoBuffers)
        add_record(step, std::move(buffer_record));
      registry.write_locked(false);
    }
    if (progress) {
      std::string line = "ddpguard-verify: rank " + std::to_string(rank) + " " +
                         entry->label + " ";
      if (kind == kInitial) {
        line += "initial: parameters " + std::to_string(params.size()) + " identical";
      } else {
        line += "step " + std::to_string(step) + " ok: " +
                (progress_gradients.empty() ? std::string("gradients not synchronised")
                                            : progress_gradients) +
                ", parameters " + std::to_string(params.size()) + " identical";
      }
      if (!buffer_text.empty())
        line += ", " + buffer_text;
      char ms[32];
      std::snprintf(ms, sizeof ms, " [%.2f ms]", step_seconds * 1e3);
      line += ms;
      std::fprintf(stderr, "%s\n", line.c_str());
      std::fflush(stderr);
    }
    progress_gradients.clear();
    step_seconds = 0;
  }
};

Verifier::Verifier(torch::nn::Module &module, ProcessGroupPtr process_group,
                   const DDPOptions &options) {
  at::Device device = at::kCPU;
  std::vector<std::string> names;
  std::vector<at::Tensor> params;
  for (const auto &item : module.named_parameters(/*recurse=*/true)) {
    names.push_back(item.key());
    params.push_back(item.value());
  }
  if (!params.empty())
    device = params.front().device();
  state_ = std::make_shared<State>(module, std::move(process_group), device);
  state_->param_names = std::move(names);
  state_->params = std::move(params);
  state_->progress = env_flag("DDPGUARD_VERIFY_PROGRESS");
  state_->broadcast_buffers = options.broadcast_buffers();
  Registry &registry = Registry::get();
  registry.configure(state_->rank, state_->world, state_->pg->getBackendName());
  auto entry = std::make_shared<Entry>();
  entry->label = take_label();
  entry->device = device.str();
  entry->broadcast_buffers = options.broadcast_buffers();
  entry->buffer_policy = options.buffer_broadcast() == BufferBroadcast::kOncePerBackward
                             ? "once_per_backward"
                             : "every_forward";
  entry->parameters = state_->params.size();
  entry->buffers = module.named_buffers(/*recurse=*/true).size();
  entry->max_buffer.kind = "buffers";
  entry->max_buffer.mode = "measured";
  state_->entry = registry.add(std::move(entry));
  registry.write(true);
}

Verifier::~Verifier() = default;

void Verifier::on_forward(bool broadcast) {
  // A backward that failed never ran its callback.
  state_->queued.store(false);
  if (!state_->initial_done) {
    state_->initial_done = true;
    state_->check_state(kInitial, broadcast);
    return;
  }
  if (state_->state_due)
    state_->check_state(kParameters, broadcast);
}

void Verifier::on_synced_forward() { state_->sync_pending.store(true); }

void Verifier::on_gradient() {
  if (state_->queued.exchange(true))
    return;
  // Queued now, this callback runs after the backward; it queues the check
  // once more so that it runs after every callback queued during the backward,
  // c10d::Reducer's finalisation (the averaged gradients) included.
  std::weak_ptr<State> weak = state_;
  torch::autograd::Engine::get_default_engine().queue_callback([weak] {
    torch::autograd::Engine::get_default_engine().queue_callback([weak] {
      auto state = weak.lock();
      if (!state)
        return;
      state->queued.store(false);
      if (state->sync_pending.exchange(false))
        state->check_gradients();
    });
  });
}

void Verifier::finish() noexcept {
  State &s = *state_;
  if (!s.failed && s.state_due && std::uncaught_exceptions() == 0) {
    try {
      s.check_state(kFinal, /*broadcast=*/false);
    } catch (const VerificationError &e) {
      // A destructor cannot throw: end the rank as an uncaught error would,
      // with the message where torchrun's summary reads it.
      std::fprintf(stderr, "%s\n", e.what());
      record_error(e.what());
      Registry::get().write(true);
      std::fflush(nullptr);
      std::_Exit(1);
    } catch (const std::exception &e) {
      std::fprintf(stderr,
                   "ddpguard-verify: rank %d %s: the final parameter check could "
                   "not run: %s\n",
                   s.rank, s.entry->label.c_str(), e.what());
    }
  }
  Registry &registry = Registry::get();
  std::lock_guard<std::mutex> lock(registry.mutex());
  s.entry->finished = true;
  registry.write_locked(true);
}

} // namespace detail
} // namespace ddpguard
