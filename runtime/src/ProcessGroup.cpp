#include <ddpguard/runtime/ProcessGroup.h>

#include <ddpguard/runtime/DistributedDataParallel.h>

#include <c10/util/Exception.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef DDPGUARD_WITH_NCCL
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <csignal>
#include <cstdlib>
#include <optional>
#include <stdexcept>

namespace ddpguard {
namespace {

std::optional<std::string> get_env(const char *name) {
  const char *value = std::getenv(name);
  if (!value || !*value)
    return std::nullopt;
  return std::string(value);
}

std::string require_env(const char *name) {
  auto value = get_env(name);
  if (!value)
    throw std::invalid_argument(
        std::string("ddpguard::init_process_group_from_env: environment "
                    "variable ") +
        name + " is not set (launch with torchrun or a "
               "launcher that sets RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT)");
  return *value;
}

int parse_int(const char *name, const std::string &text, int low, int high) {
  size_t used = 0;
  long value = 0;
  try {
    value = std::stol(text, &used);
  } catch (const std::exception &) {
    used = 0;
  }
  if (used != text.size() || value < low || value > high)
    throw std::invalid_argument(
        std::string("ddpguard::init_process_group_from_env: ") + name + "='" +
        text + "' is not an integer in [" + std::to_string(low) + ", " +
        std::to_string(high) + "]");
  return static_cast<int>(value);
}

std::string message_of(const std::exception &e) {
  if (auto *c10 = dynamic_cast<const c10::Error *>(&e))
    return c10->what_without_backtrace();
  return e.what();
}

bool is_loopback(const std::string &addr) {
  return addr == "localhost" || addr == "::1" || addr.rfind("127.", 0) == 0;
}

// Gloo's transport device: GLOO_SOCKET_IFNAME as in PyTorch; a loopback
// MASTER_ADDR means a single-host run, so bind to loopback; otherwise the
// address the host name resolves to.
std::shared_ptr<::gloo::transport::Device> gloo_device() {
  if (auto ifname = get_env("GLOO_SOCKET_IFNAME"))
    return c10d::ProcessGroupGloo::createDeviceForInterface(*ifname);
  auto addr = get_env("MASTER_ADDR");
  if (!addr || is_loopback(*addr))
    return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
  return c10d::ProcessGroupGloo::createDefaultDevice();
}

// A peer that dies closes its sockets, and a write to one raises SIGPIPE,
// whose default action ends this rank without a word (seen in
// runtime.faults.rank_killed.w3: a survivor exited with -13 instead of
// naming the dead rank). CPython ignores SIGPIPE at start-up, so PyTorch's
// DDP gets an error from the write instead; do the same, unless the program
// installed a handler of its own.
void ignore_default_sigpipe() {
  struct sigaction current {};
  if (sigaction(SIGPIPE, nullptr, &current) == 0 &&
      current.sa_handler == SIG_DFL)
    std::signal(SIGPIPE, SIG_IGN);
}

// As torch.distributed's _new_process_group_helper: a ProcessGroup with the
// backend registered for the device types it serves. Gloo also serves CUDA
// tensors (staged through host memory), as with init_process_group("gloo").
ProcessGroupPtr make_gloo(const c10::intrusive_ptr<c10d::Store> &store,
                          int rank, int size,
                          std::chrono::milliseconds timeout) {
  auto options = c10d::ProcessGroupGloo::Options::create(timeout);
  options->devices.push_back(gloo_device());
  auto backend =
      c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, options);
  auto pg = c10::make_intrusive<c10d::ProcessGroup>(store, rank, size);
  pg->setDefaultBackend(c10d::ProcessGroup::BackendType::GLOO);
  pg->setBackend(c10::DeviceType::CPU, c10d::ProcessGroup::BackendType::GLOO,
                 backend);
  pg->setBackend(c10::DeviceType::CUDA, c10d::ProcessGroup::BackendType::GLOO,
                 backend);
  return pg;
}

#ifdef DDPGUARD_WITH_NCCL
ProcessGroupPtr make_nccl(const c10::intrusive_ptr<c10d::Store> &store,
                          int rank, int size,
                          std::chrono::milliseconds timeout) {
  auto options = c10d::ProcessGroupNCCL::Options::create();
  options->timeout = timeout;
  auto backend =
      c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, size, options);
  auto pg = c10::make_intrusive<c10d::ProcessGroup>(store, rank, size);
  pg->setDefaultBackend(c10d::ProcessGroup::BackendType::NCCL);
  pg->setBackend(c10::DeviceType::CUDA, c10d::ProcessGroup::BackendType::NCCL,
                 backend);
  return pg;
}
#endif

// Ranks launched with different WORLD_SIZE values pass the store's
// rendezvous (rank 0 counts only its own number of clients) and then hang
// in Gloo's connectFullMesh past the timeout. Each rank publishes its world
// size and compares it with every peer's, through the store, first.
void check_world_size(c10d::Store &store, const LaunchEnv &env,
                      std::chrono::milliseconds timeout) {
  const std::string prefix = "ddpguard/world_size/";
  auto bytes = [](const std::string &text) {
    return std::vector<uint8_t>(text.begin(), text.end());
  };
  const std::string mine = std::to_string(env.world_size);
  store.set(prefix + std::to_string(env.rank), bytes(mine));
  std::string mismatch;
  int last = 0;
  for (; last < env.world_size && mismatch.empty(); ++last) {
    if (last == env.rank)
      continue;
    const std::string key = prefix + std::to_string(last);
    store.wait({key}, timeout);
    const std::vector<uint8_t> value = store.get(key);
    const std::string theirs(value.begin(), value.end());
    if (theirs != mine)
      mismatch = "ddpguard: rank " + std::to_string(env.rank) +
                 " was started with WORLD_SIZE=" + mine + " but rank " +
                 std::to_string(last) + " with WORLD_SIZE=" + theirs +
                 ": every rank must be started with the same WORLD_SIZE";
  }
  store.set(prefix + "read/" + std::to_string(env.rank), bytes("1"));
  if (mismatch.empty())
    return;
  // The peers read this rank's size before it fails and rank 0's store
  // goes away, so that each of them names the mismatch too.
  for (int peer = 0; peer < last; ++peer)
    if (peer != env.rank) {
      try {
        store.wait({prefix + "read/" + std::to_string(peer)}, timeout);
      } catch (const c10::Error &) {
        break;
      }
    }
  throw std::runtime_error(mismatch);
}

} // namespace

LaunchEnv read_launch_env() {
  LaunchEnv env;
  env.world_size = parse_int("WORLD_SIZE", require_env("WORLD_SIZE"), 1, 1 << 20);
  env.rank = parse_int("RANK", require_env("RANK"), 0, env.world_size - 1);
  if (auto local = get_env("LOCAL_RANK"))
    env.local_rank = parse_int("LOCAL_RANK", *local, 0, 1 << 20);
  env.master_addr = require_env("MASTER_ADDR");
  env.master_port = parse_int("MASTER_PORT", require_env("MASTER_PORT"), 1, 65535);
  env.use_agent_store = get_env("TORCHELASTIC_USE_AGENT_STORE") == std::string("True");
  if (auto restarts = get_env("TORCHELASTIC_RESTART_COUNT"))
    env.restart_count = *restarts;
  return env;
}

ProcessGroupPtr new_process_group(const std::string &backend,
                                  const c10::intrusive_ptr<c10d::Store> &store,
                                  int rank, int world_size,
                                  std::chrono::milliseconds timeout) {
  ignore_default_sigpipe();
  try {
    if (backend == "gloo")
      return make_gloo(store, rank, world_size, timeout);
    if (backend == "nccl") {
#ifdef DDPGUARD_WITH_NCCL
      return make_nccl(store, rank, world_size, timeout);
#else
      throw std::invalid_argument(
          "ddpguard was built without NCCL (configure with "
          "-DDDPGUARD_WITH_NCCL=ON against a CUDA LibTorch)");
#endif
    }
  } catch (const std::invalid_argument &) {
    throw;
  } catch (const std::exception &e) {
    throw std::runtime_error(
        "ddpguard: creating the " + backend + " process group failed on rank " +
        std::to_string(rank) + " of " + std::to_string(world_size) +
        " (timeout " + std::to_string(timeout.count()) + " ms): " +
        message_of(e) + " (a peer may have died or never joined)");
  }
  throw std::invalid_argument("ddpguard: unknown backend '" + backend +
                              "' (expected \"gloo\" or \"nccl\")");
}

ProcessGroupPtr init_process_group_from_env(const std::string &backend,
                                            std::chrono::milliseconds timeout) {
  const LaunchEnv env = read_launch_env();
  install_error_recorder();
  explain_inplace_errors(env.rank);
#ifdef DDPGUARD_WITH_NCCL
  // One GPU per local rank, as torchrun users write torch.cuda.set_device(
  // LOCAL_RANK): NCCL's communicators and the model live there.
  if (backend == "nccl")
    c10::cuda::set_device(static_cast<c10::DeviceIndex>(env.local_rank));
#endif
  c10d::TCPStoreOptions options;
  options.port = static_cast<std::uint16_t>(env.master_port);
  options.isServer = env.rank == 0 && !env.use_agent_store;
  options.numWorkers = env.world_size;
  options.waitWorkers = true;
  options.timeout = timeout;
  const std::string where =
      env.master_addr + ":" + std::to_string(env.master_port);
  c10::intrusive_ptr<c10d::Store> store;
  try {
    store = c10::make_intrusive<c10d::TCPStore>(env.master_addr, options);
  } catch (const std::exception &e) {
    throw std::runtime_error(
        "ddpguard: rendezvous at " + where +
        " (MASTER_ADDR:MASTER_PORT) failed for rank " + std::to_string(env.rank) +
        " of " + std::to_string(env.world_size) +
        (options.isServer ? " (hosting the store)" : " (connecting to the store)") +
        " within " + std::to_string(timeout.count()) + " ms: " + message_of(e));
  }
  if (env.use_agent_store)
    store = c10::make_intrusive<c10d::PrefixStore>(
        "/worker/attempt_" + env.restart_count, store);
  try {
    check_world_size(*store, env, timeout);
  } catch (const c10::Error &e) {
    throw std::runtime_error(
        "ddpguard: rank " + std::to_string(env.rank) + " of " +
        std::to_string(env.world_size) + " found no world size of its peers at " +
        where + " within " + std::to_string(timeout.count()) +
        " ms: " + message_of(e));
  }
  return new_process_group(backend, store, env.rank, env.world_size, timeout);
}

} // namespace ddpguard
