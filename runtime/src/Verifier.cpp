// Verification mode: cross-rank checks of gradients, parameters and buffers
// by hashes and one allgather per check, progress lines and a JSON summary
// per rank. See Verifier.h for when each check runs, docs/verifier.md for the
// user's side.
#include "JsonString.h"
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
  bool immediate = false;
  int64_t exchanges = 0;
  int batch_size = 1;
  std::unique_ptr<Divergence> divergence;
};

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
         << ", \"immediate\": " << (e.immediate ? "true" : "false")
         << ", \"parameters\": " << e.parameters << ", \"buffers\": " << e.buffers
         << ",\n     \"steps_completed\": " << e.steps_completed
         << ", \"checks\": " << e.checks
         << ", \"max_gradient_divergence\": " << json_number(e.max_gradient_divergence)
         << ", \"max_parameter_divergence\": " << json_number(e.max_parameter_divergence)
         << ",\n     \"max_buffer_divergence\": ";
      write_check(os, e.max_buffer);
      os << ",\n     \"exchanges\": " << e.exchanges << ", \"batch_size\": " << e.batch_size
         << ", \"verify_seconds\": " << json_number(e.verify_seconds)
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
// The exchange: one int64 row per rank, one allgather per exchange. An
// exchange carries the checks of one or more steps (see "batching" below):
//
//   [0] magic  [1] number of checks  [2] rank 0: the next batch size  [3] P
//   then per check:
//     kind, step, has gradients, has parameters, buffer mode, B,
//     P gradient hashes (0 if none), P parameter hashes (0 if none),
//     B buffer hashes
//
// Buffers that are not synchronised are measured against rank 0's, whose
// copies (taken when each check was made) come by one broadcast issued with
// the allgather.
//
// Batching: when a step is much shorter than an exchange (small models,
// slow or busy hosts), the checks of several steps share one exchange: rank
// 0 suggests the next batch size in its row (enough checks that the
// exchange's smoothed cost is at most 2% of their median spacing, at most
// 32), so all ranks agree on it.
// DDPGUARD_VERIFY_BATCH=N fixes it; DDPGUARD_VERIFY_SYNC=1 exchanges every
// check at once (gradients before backward() returns).

constexpr int64_t kMagic = 0x6464707665726966; // "ddpverif"
constexpr size_t kPreamble = 4;
constexpr size_t kCheckHeader = 6;
constexpr int kMaxBatch = 32;
constexpr double kTargetShare = 0.02;
enum Kind : int64_t { kInitial = 1, kGradients = 2, kStep = 3, kFinal = 4, kMeasure = 5 };
enum BufferMode : int64_t { kNoBuffers = 0, kSynchronised = 1, kMeasured = 2 };

const char *kind_name(int64_t kind) {
  switch (kind) {
  case kInitial: return "initial";
  case kGradients: return "gradient";
  case kStep: return "step";
  case kFinal: return "final";
  case kMeasure: return "difference";
  default: return "unknown";
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

std::string cause_of(const std::exception &e) {
  if (auto *c10 = dynamic_cast<const c10::Error *>(&e))
    return c10->what_without_backtrace();
  return e.what();
}

int env_int(const char *name, int fallback) {
  const char *v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

// One check, made on this rank and waiting for its exchange.
struct Check {
  int64_t kind = 0;
  int64_t step = 0;
  bool has_grads = false;
  bool has_params = false;
  int64_t mode = kNoBuffers;
  std::vector<std::string> buffer_names;
  std::vector<uint64_t> hashes; // P gradients, P parameters, B buffers
  at::Tensor local;             // kMeasured: this rank's buffers, flattened (double)
  std::vector<int64_t> numels;
  double seconds = 0; // hashing time
  uint64_t bytes = 0;
};

} // namespace

struct Verifier::State {
  torch::nn::Module &module;
  ProcessGroupPtr pg;
  int rank;
  int world;
  at::Device device;
  std::vector<std::string> param_names;
  std::vector<at::Tensor> params;
  std::shared_ptr<Entry> entry;
  bool progress = false;
  bool broadcast_buffers = true;
  bool immediate = false; // DDPGUARD_VERIFY_SYNC=1
  int fixed_batch = 0;    // DDPGUARD_VERIFY_BATCH=N

  std::mutex mutex;                      // one check at a time
  std::atomic<bool> sync_pending{false}; // the next backward synchronises
  std::atomic<bool> queued{false};       // an end-of-backward callback is queued
  int64_t steps = 0;                     // synchronised backwards seen
  bool state_due = false;                // a backward whose step check is not made yet
  bool initial_done = false;
  bool failed = false;
  std::vector<uint64_t> grad_hashes; // of the last synchronised backward
  bool have_grads = false;
  std::vector<Check> batch;
  int batch_size = 1;
  // Rank 0's measurements for the batch size: the exchanges' cost (smoothed)
  // and the intervals between consecutive checks since the last exchange.
  double exchange_seconds = 0;
  Clock::time_point last_check{};
  std::vector<double> intervals;

  State(torch::nn::Module &m, ProcessGroupPtr group, at::Device dev)
      : module(m), pg(std::move(group)), rank(pg->getRank()),
        world(pg->getSize()), device(dev) {}

  [[noreturn]] void collective_failed(const std::exception &e, const std::string &what) {
    throw std::runtime_error(
        "ddpguard-verify: the exchange of " + what + " failed on rank " +
        std::to_string(rank) + " of " + std::to_string(world) + " (" +
        pg->getBackendName() + "): " + cause_of(e) +
        "\n  likely causes: a rank died or exited early, a rank hangs, or the "
        "ranks run different programs or models");
  }

  std::vector<std::vector<int64_t>> allgather(const std::vector<int64_t> &row,
                                              const std::string &what) {
    std::vector<at::Tensor> inputs{
        at::tensor(row, at::TensorOptions().dtype(at::kLong)).to(device)};
    std::vector<std::vector<at::Tensor>> outputs(1);
    for (int r = 0; r < world; ++r)
      outputs[0].push_back(at::empty_like(inputs[0]));
    try {
      pg->allgather(outputs, inputs)->wait();
    } catch (const std::exception &e) {
      collective_failed(e, what);
    }
    std::vector<std::vector<int64_t>> rows;
    for (const auto &t : outputs[0]) {
      const at::Tensor host = t.cpu();
      const auto *p = host.const_data_ptr<int64_t>();
      rows.emplace_back(p, p + host.numel());
    }
    return rows;
  }

  // Every rank's max |t - rank 0's t|, and that relative to rank 0's largest
  // |t|, by a broadcast of rank 0's copy. Only after hashes differed, and
  // only if every rank holds the tensor in one shape.
  bool measure(const at::Tensor &t, int bad_rank, double &abs, double &rel) {
    at::NoGradGuard no_grad;
    const int64_t seed = t.defined() ? static_cast<int64_t>(detail::tensor_seed(t)) : 0;
    const auto shapes = allgather({kMagic, kMeasure, seed}, "a difference measurement");
    for (const auto &s : shapes)
      if (s[2] == 0 || s[2] != shapes[0][2])
        return false;
    at::Tensor mine = t.detach();
    std::vector<at::Tensor> reference{mine.clone()};
    try {
      pg->broadcast(reference)->wait();
    } catch (const std::exception &e) {
      collective_failed(e, "a difference measurement");
    }
    const at::Tensor a = mine.to(at::kDouble), b = reference[0].to(at::kDouble);
    const double my_abs = a.numel() ? (a - b).abs().max().item<double>() : 0.0;
    const double scale = b.numel() ? b.abs().max().item<double>() : 0.0;
    const double my_rel = scale > 0 ? my_abs / scale : (my_abs > 0 ? INFINITY : 0.0);
    const auto rows = allgather({kMagic, kMeasure, double_bits(my_abs), double_bits(my_rel)},
                                "a difference measurement");
    abs = bits_double(rows[bad_rank][2]);
    rel = bits_double(rows[bad_rank][3]);
    return true;
  }

  [[noreturn]] void fail(const std::string &message, const std::string &kind,
                         int64_t step, int bad_rank, const std::string &tensor,
                         double abs, double rel) {
    failed = true;
    batch.clear();
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

  // Throws VerificationError for the first tensor (in order) whose hash on
  // some rank differs from rank 0's. All ranks hold the same rows, so all of
  // them throw the same message. `tensors` (may be empty) are measured.
  void compare(const std::vector<std::vector<int64_t>> &rows, const Check &c,
               size_t offset, const std::vector<std::string> &names,
               const std::vector<at::Tensor> &tensors, const char *what,
               const std::string &measured_when, CheckRecord &record) {
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
    const bool gradient = record.kind == "gradients";
    const uint64_t h0 = static_cast<uint64_t>(rows[0][offset + first.index]);
    const uint64_t hr = static_cast<uint64_t>(rows[first.rank][offset + first.index]);
    bool all_defined = true;
    for (int r = 0; r < world; ++r)
      all_defined = all_defined && rows[r][offset + first.index] != 0;
    double abs = NAN, rel = NAN;
    std::ostringstream magnitude;
    if (all_defined && !tensors.empty() &&
        measure(first.index < tensors.size() ? tensors[first.index] : at::Tensor(),
                first.rank, abs, rel)) {
      magnitude << "max abs difference " << abs << ", relative " << rel << measured_when
                << "; ";
    } else if (!all_defined) {
      magnitude << "undefined on rank " << (h0 == 0 ? 0 : first.rank) << "; ";
    } else if (gradient) {
      magnitude << "not measured: the gradients of that step are gone when its check is "
                   "exchanged (DDPGUARD_VERIFY_SYNC=1 measures them); ";
    }
    std::ostringstream os;
    os << "ddpguard-verify: the ranks diverged " << step_text(c.step) << ": "
       << (gradient ? "the gradient of " : "") << what << " '" << names[first.index]
       << "' on rank " << first.rank << " differs from rank 0";
    if (gradient)
      os << " after the synchronised backward";
    else if (c.kind != kInitial && record.kind == "parameters")
      os << " after the optimizer step";
    else if (record.kind == "buffers")
      os << " after the broadcast";
    os << " (" << magnitude.str() << "hash " << hex(hr) << " on rank " << first.rank
       << ", " << hex(h0) << " on rank 0)";
    if (mismatches.size() > 1) {
      os << "; " << mismatches.size() << " of " << names.size() << " "
         << (gradient ? "gradient" : what) << "s differ:";
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
    fail(os.str(), record.kind, c.step, first.rank, names[first.index], abs, rel);
  }

  [[noreturn]] void out_of_step(const std::vector<std::vector<int64_t>> &rows, int r,
                                int64_t step) {
    auto describe = [](const std::vector<int64_t> &row) {
      if (row.size() < kPreamble + kCheckHeader || row[0] != kMagic)
        return std::string("not verifying");
      const int64_t *c = row.data() + kPreamble;
      std::ostringstream os;
      os << "at the " << kind_name(c[0]) << " check " << step_text(c[1]) << " with "
         << row[3] << " parameters and " << c[5] << " buffers";
      return os.str();
    };
    std::ostringstream os;
    os << "ddpguard-verify: the ranks are out of step " << step_text(step) << ": rank " << r
       << " is " << describe(rows[r]) << ", rank 0 is " << describe(rows[0])
       << " (they ran different numbers of forwards or backwards, or different models) ["
       << entry->label << "]";
    fail(os.str(), "out of step", step, r, "", NAN, NAN);
  }

  static uint64_t bytes_of(const std::vector<at::Tensor> &tensors) {
    uint64_t n = 0;
    for (const auto &t : tensors)
      if (t.defined())
        n += static_cast<uint64_t>(t.numel()) * t.element_size();
    return n;
  }

  std::vector<at::Tensor> current_grads() const {
    std::vector<at::Tensor> grads;
    for (const auto &p : params)
      grads.push_back(p.grad().defined() ? p.grad().detach() : at::Tensor());
    return grads;
  }

  std::vector<at::Tensor> current_params() const {
    std::vector<at::Tensor> out;
    for (const auto &p : params)
      out.push_back(p.detach());
    return out;
  }

  void current_buffers(std::vector<std::string> &names, std::vector<at::Tensor> &values) const {
    for (const auto &item : module.named_buffers(/*recurse=*/true)) {
      names.push_back(item.key());
      values.push_back(item.value().detach());
    }
  }

  // Hashes what a check covers, on this rank.
  Check make(int64_t kind, int64_t step, bool with_grads, bool with_params,
             int64_t buffer_mode) {
    const auto start = Clock::now();
    at::NoGradGuard no_grad;
    Check c;
    c.kind = kind;
    c.step = step;
    c.has_grads = with_grads;
    c.has_params = with_params;
    std::vector<at::Tensor> buffers;
    if (buffer_mode != kNoBuffers)
      current_buffers(c.buffer_names, buffers);
    c.mode = buffers.empty() ? kNoBuffers : buffer_mode;
    const size_t p = params.size();
    std::vector<at::Tensor> hashed =
        with_params ? current_params() : std::vector<at::Tensor>(p);
    hashed.insert(hashed.end(), buffers.begin(), buffers.end());
    const auto hashes = hash_tensors(hashed);
    c.hashes.assign(p, 0);
    if (with_grads)
      for (size_t i = 0; i < p && i < grad_hashes.size(); ++i)
        c.hashes[i] = grad_hashes[i];
    c.hashes.insert(c.hashes.end(), hashes.begin(), hashes.end());
    c.bytes = bytes_of(hashed);
    if (c.mode == kMeasured) {
      std::vector<at::Tensor> flat;
      for (const auto &b : buffers) {
        c.numels.push_back(b.numel());
        flat.push_back(b.reshape({-1}).to(at::kDouble));
      }
      c.local = at::cat(flat);
    }
    c.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return c;
  }

  void add(Check c) {
    if (rank == 0) {
      const auto now = Clock::now();
      if (last_check != Clock::time_point{})
        intervals.push_back(std::chrono::duration<double>(now - last_check).count());
      last_check = now;
    }
    batch.push_back(std::move(c));
    if (static_cast<int>(batch.size()) >= batch_size)
      exchange();
  }

  // rank 0: how many checks the next exchange should carry, from the
  // exchanges' cost and the median interval between checks (robust to pauses
  // between steps: evaluation, data loading, other models).
  int suggest_batch() {
    if (fixed_batch > 0)
      return fixed_batch;
    if (immediate)
      return 1;
    int next = 1;
    if (exchange_seconds > 0 && !intervals.empty()) {
      std::nth_element(intervals.begin(), intervals.begin() + intervals.size() / 2,
                       intervals.end());
      const double per_check = intervals[intervals.size() / 2];
      if (per_check > 0)
        next = static_cast<int>(std::ceil(exchange_seconds / (kTargetShare * per_check)));
    }
    intervals.clear();
    return std::max(1, std::min(kMaxBatch, next));
  }

  // Exchanges the batch's hashes (and rank 0's copies of measured buffers)
  // and compares them; throws on a divergence.
  void exchange() {
    if (batch.empty())
      return;
    const auto start = Clock::now();
    at::NoGradGuard no_grad;
    std::vector<Check> checks;
    checks.swap(batch);
    const size_t p = params.size();
    std::vector<int64_t> row{kMagic, static_cast<int64_t>(checks.size()),
                             rank == 0 ? suggest_batch() : 0,
                             static_cast<int64_t>(p)};
    std::vector<at::Tensor> measured;
    for (const auto &c : checks) {
      row.insert(row.end(), {c.kind, c.step, c.has_grads ? 1 : 0, c.has_params ? 1 : 0,
                             c.mode, static_cast<int64_t>(c.buffer_names.size())});
      for (uint64_t h : c.hashes)
        row.push_back(static_cast<int64_t>(h));
      if (c.mode == kMeasured)
        measured.push_back(c.local);
    }
    // Rank 0's measured buffers, one broadcast for the whole batch.
    std::vector<at::Tensor> reference;
    c10::intrusive_ptr<c10d::Work> broadcast;
    const std::string what = std::string("the ") + kind_name(checks.front().kind) +
                             " check " + step_text(checks.front().step);
    if (!measured.empty()) {
      at::Tensor flat = at::cat(measured);
      reference = {rank == 0 ? flat : at::empty_like(flat)};
      try {
        broadcast = pg->broadcast(reference);
      } catch (const std::exception &e) {
        collective_failed(e, what);
      }
    }
    const auto rows = allgather(row, what);
    if (broadcast) {
      try {
        broadcast->wait();
      } catch (const std::exception &e) {
        collective_failed(e, what);
      }
    }
    for (int r = 1; r < world; ++r)
      if (rows[r].size() != rows[0].size() || rows[r][0] != kMagic ||
          rows[r][1] != rows[0][1] || rows[r][3] != rows[0][3])
        out_of_step(rows, r, checks.front().step);
    const bool now = immediate || checks.size() == 1;
    std::vector<double> exchange_share(checks.size(), 0.0);
    size_t at = kPreamble;
    int64_t measured_at = 0;
    for (size_t k = 0; k < checks.size(); ++k) {
      const Check &c = checks[k];
      for (int r = 1; r < world; ++r)
        for (size_t i = 0; i < kCheckHeader; ++i)
          if (rows[r][at + i] != rows[0][at + i])
            out_of_step(rows, r, c.step);
      const size_t b = c.buffer_names.size();
      const size_t base = at + kCheckHeader;
      // Compared after the step they belong to, the tensors have moved on:
      // a difference is measured then, and says so.
      const bool latest = now && k + 1 == checks.size();
      const std::string later = latest ? "" : " (measured later, at the exchange)";
      std::vector<CheckRecord> records;
      std::string text;
      if (c.has_grads) {
        CheckRecord r;
        r.kind = "gradients";
        r.tensors = p;
        compare(rows, c, base, param_names,
                latest && c.kind == kGradients ? current_grads() : std::vector<at::Tensor>{},
                "parameter", later, r);
        records.push_back(r);
        text = "gradients " + std::to_string(p) + " identical";
      }
      if (c.has_params) {
        CheckRecord r;
        r.kind = "parameters";
        r.tensors = p;
        compare(rows, c, base + p, param_names, current_params(), "parameter", later, r);
        records.push_back(r);
        text += (text.empty() ? "" : ", ") + std::string("parameters ") +
                std::to_string(p) + " identical";
      }
      if (c.mode == kSynchronised) {
        CheckRecord r;
        r.kind = "buffers";
        r.mode = "synchronised";
        r.tensors = b;
        std::vector<std::string> names;
        std::vector<at::Tensor> values;
        if (latest)
          current_buffers(names, values);
        compare(rows, c, base + 2 * p, c.buffer_names,
                values.size() == b ? values : std::vector<at::Tensor>{}, "buffer", later, r);
        records.push_back(r);
        text += ", buffers " + std::to_string(b) + " identical (broadcast from rank 0)";
      } else if (c.mode == kMeasured) {
        CheckRecord r;
        r.kind = "buffers";
        r.mode = "measured";
        r.tensors = b;
        for (int q = 1; q < world; ++q)
          for (size_t i = 0; i < b; ++i)
            if (rows[q][base + 2 * p + i] != rows[0][base + 2 * p + i])
              r.identical = false;
        // This rank's difference from rank 0 (all ranks' summaries together
        // give the largest).
        int64_t offset = 0;
        for (size_t i = 0; i < b; ++i) {
          const int64_t n = c.numels[i];
          if (n > 0) {
            const at::Tensor mine = c.local.narrow(0, offset, n);
            const at::Tensor ref = reference[0].narrow(0, measured_at + offset, n);
            const double abs = (mine - ref).abs().max().item<double>();
            const double scale = ref.abs().max().item<double>();
            const double rel = scale > 0 ? abs / scale : (abs > 0 ? INFINITY : 0.0);
            if (abs > r.max_abs) {
              r.max_abs = abs;
              r.tensor = c.buffer_names[i];
              r.rank = rank;
            }
            r.max_rel = std::max(r.max_rel, rel);
          }
          offset += n;
        }
        measured_at += c.local.numel();
        std::ostringstream os;
        os << ", buffers " << b << " not synchronised: ";
        if (r.identical)
          os << "identical";
        else if (rank == 0)
          os << "differ on other ranks (rank 0 is the reference)";
        else
          os << "max divergence from rank 0 abs " << r.max_abs << " rel " << r.max_rel
             << " (" << (r.tensor.empty() ? "-" : r.tensor) << ")";
        text += os.str();
        records.push_back(r);
      }
      at = base + 2 * p + b;
      record(c, std::move(records), text, checks.size());
    }
    if (!immediate && fixed_batch == 0)
      batch_size = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(kMaxBatch, rows[0][2])));
    else if (fixed_batch > 0)
      batch_size = fixed_batch;
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    exchange_seconds = exchange_seconds > 0 ? 0.7 * exchange_seconds + 0.3 * seconds : seconds;
    Registry &registry = Registry::get();
    std::lock_guard<std::mutex> lock(registry.mutex());
    entry->verify_seconds += seconds;
    ++entry->exchanges;
    entry->batch_size = batch_size;
    registry.write_locked(false);
  }

  void record(const Check &c, std::vector<CheckRecord> records, const std::string &text,
              size_t batch_checks) {
    {
      Registry &registry = Registry::get();
      std::lock_guard<std::mutex> lock(registry.mutex());
      entry->verify_seconds += c.seconds;
      entry->hashed_bytes += c.bytes;
      for (auto &r : records) {
        if (r.kind == "buffers" && r.mode == "measured") {
          const double max_rel = std::max(entry->max_buffer.max_rel, r.max_rel);
          if (r.max_abs >= entry->max_buffer.max_abs && r.max_abs > 0)
            entry->max_buffer = r;
          entry->max_buffer.max_rel = max_rel;
          entry->max_buffer.kind = "buffers";
          entry->max_buffer.mode = "measured";
        }
        add_record(c.step, std::move(r));
      }
      if (c.kind != kInitial)
        entry->steps_completed = std::max(entry->steps_completed, c.step + 1);
    }
    if (progress && c.kind != kGradients) {
      const std::string what = c.kind == kInitial ? std::string("initial: ")
                                                  : "step " + std::to_string(c.step) + " ok: ";
      const std::string grads =
          (!c.has_grads && c.kind != kInitial) ? "gradients " + std::to_string(params.size()) +
                                                     " identical, "
                                               : "";
      std::string batch_note;
      if (batch_checks > 1)
        batch_note = " (one of " + std::to_string(batch_checks) + " checks in one exchange)";
      char ms[48];
      std::snprintf(ms, sizeof ms, " [hashing %.2f ms]", c.seconds * 1e3);
      std::fprintf(stderr, "ddpguard-verify: rank %d %s %s%s%s%s%s\n", rank,
                   entry->label.c_str(), what.c_str(), grads.c_str(), text.c_str(), ms,
                   batch_note.c_str());
      std::fflush(stderr);
    }
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

  // The step check of the last synchronised backward: its gradients (unless
  // already exchanged), the parameters after the optimizer step, the buffers.
  void make_step(int64_t kind, int64_t buffer_mode) {
    Check c = make(kind, steps - 1, have_grads, true, buffer_mode);
    have_grads = false;
    state_due = false;
    add(std::move(c));
  }

  void on_forward(bool broadcast) {
    std::lock_guard<std::mutex> lock(mutex);
    if (failed)
      return;
    const int64_t mode = broadcast ? kSynchronised : kMeasured;
    if (!initial_done) {
      initial_done = true;
      add(make(kInitial, -1, false, true, mode));
    } else if (state_due) {
      make_step(kStep, mode);
    }
  }

  // The end of a synchronised backward, after c10d::Reducer's finalisation.
  void on_backward_end() {
    std::lock_guard<std::mutex> lock(mutex);
    if (failed)
      return;
    if (state_due) // two backwards without a forward: the first one's step now
      make_step(kStep, broadcast_buffers ? kNoBuffers : kMeasured);
    grad_hashes = hash_tensors(current_grads());
    have_grads = true;
    ++steps;
    state_due = true;
    if (immediate) { // the gradients now, while the averaged values are at hand
      Check c = make(kGradients, steps - 1, true, false, kNoBuffers);
      have_grads = false;
      add(std::move(c));
    }
  }

  void on_finish() {
    std::lock_guard<std::mutex> lock(mutex);
    if (failed)
      return;
    // After the last forward, synchronised buffers hold each rank's own
    // updates since the broadcast (as in PyTorch; the next forward would
    // broadcast again): only rank-local buffers are measured then.
    if (state_due) {
      Check c = make(kFinal, steps - 1, have_grads, true,
                     broadcast_buffers ? kNoBuffers : kMeasured);
      have_grads = false;
      state_due = false;
      batch.push_back(std::move(c));
    }
    exchange();
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
  state_->immediate = env_flag("DDPGUARD_VERIFY_SYNC");
  state_->fixed_batch = state_->immediate ? 1 : std::max(0, env_int("DDPGUARD_VERIFY_BATCH", 0));
  if (state_->fixed_batch > 0)
    state_->batch_size = state_->fixed_batch;
  state_->broadcast_buffers = forward_sync_buffers(options);
  Registry &registry = Registry::get();
  registry.configure(state_->rank, state_->world, state_->pg->getBackendName());
  auto entry = std::make_shared<Entry>();
  entry->label = take_label();
  entry->device = device.str();
  entry->broadcast_buffers = forward_sync_buffers(options);
  entry->buffer_policy = options.buffer_broadcast() == BufferBroadcast::kOncePerBackward
                             ? "once_per_backward"
                             : "every_forward";
  entry->immediate = state_->immediate;
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
  state_->on_forward(broadcast);
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
        state->on_backward_end();
    });
  });
}

void Verifier::finish() noexcept {
  State &s = *state_;
  if (std::uncaught_exceptions() == 0) {
    try {
      s.on_finish();
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
                   "ddpguard-verify: rank %d %s: the last checks could not be exchanged: %s\n",
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
