// Process groups from the launch environment, as torchrun sets it.
#pragma once

#include <c10/util/intrusive_ptr.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <string>

namespace ddpguard {

using ProcessGroupPtr = c10::intrusive_ptr<c10d::ProcessGroup>;

// PyTorch's default for init_process_group (30 minutes).
constexpr std::chrono::milliseconds kDefaultTimeout{30 * 60 * 1000};

// The variables a launcher (torchrun, Slurm wrappers) sets.
struct LaunchEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string master_addr;
  int master_port = 0;
  // TORCHELASTIC_USE_AGENT_STORE=True: the launcher hosts the TCPStore, so
  // rank 0 connects as a client like the others (torchrun's behaviour).
  bool use_agent_store = false;
  std::string restart_count = "0";
};

// Reads RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT (and the
// torchelastic agent-store variables); a missing or malformed one is a
// std::invalid_argument naming the variable.
LaunchEnv read_launch_env();

// Connects to (rank 0: hosts, unless an agent store is used) the TCPStore
// rendezvous at MASTER_ADDR:MASTER_PORT, then creates a "gloo" or "nccl"
// process group over it. Every blocking step (store connection, waiting for
// peers, collectives) is bounded by `timeout`; failures throw
// std::runtime_error naming the address, rank and cause.
ProcessGroupPtr init_process_group_from_env(
    const std::string &backend,
    std::chrono::milliseconds timeout = kDefaultTimeout);

// Writes `message` where torchrun's failure summary reads it: the JSON file
// named by TORCHELASTIC_ERROR_FILE, which torchrun sets for every worker.
// Returns false when no launcher asked for one or it cannot be written.
bool record_error(const std::string &message);

// Makes an uncaught exception reach torchrun's failure summary: on
// std::terminate, records the exception (after the hazard detector's latest
// report, if any) with record_error, then aborts as before.
// init_process_group_from_env installs it.
void install_error_recorder();

// Creates a process group of `backend` on an existing store (one group per
// store prefix). init_process_group_from_env uses it after the rendezvous.
// For "nccl" the caller selects the CUDA device (LOCAL_RANK) beforehand.
ProcessGroupPtr new_process_group(const std::string &backend,
                                  const c10::intrusive_ptr<c10d::Store> &store,
                                  int rank, int world_size,
                                  std::chrono::milliseconds timeout);

} // namespace ddpguard
