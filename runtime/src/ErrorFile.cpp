// Failure reports for torchrun: what Python's @record decorator does for a
// Python worker (torch.distributed.elastic.multiprocessing.errors), for C++.
#include <ddpguard/runtime/ProcessGroup.h>

#include "HazardDetector.h"
#include "JsonString.h"

#include <c10/util/Exception.h>

#include <cstdlib>
#include <ctime>
#include <exception>
#include <fstream>
#include <string>

namespace ddpguard {
namespace {

std::terminate_handler previous_handler = nullptr;

[[noreturn]] void record_and_terminate() {
  std::string message;
  if (auto current = std::current_exception()) {
    try {
      std::rethrow_exception(current);
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
  const std::string report = latest_hazard_report();
  record_error(report.empty() ? message : report + "\n" + message);
  if (previous_handler)
    previous_handler();
  std::abort();
}

} // namespace

bool record_error(const std::string &message) {
  const char *path = std::getenv("TORCHELASTIC_ERROR_FILE");
  if (!path || !*path)
    return false;
  std::ofstream out(path, std::ios::trunc);
  out << "{\"message\": " << detail::json_string(message)
      << ", \"timestamp\": " << static_cast<long long>(std::time(nullptr))
      << "}\n";
  return static_cast<bool>(out.flush());
}

void install_error_recorder() {
  static const bool installed = [] {
    previous_handler = std::set_terminate(record_and_terminate);
    return true;
  }();
  (void)installed;
}

} // namespace ddpguard
