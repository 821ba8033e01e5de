// ddpguard-launch: starts N local processes of a program with the variables
// torchrun sets (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, and
// torchelastic's agent store). Like torchrun's agent it hosts the TCPStore
// itself, on a free port, so concurrent launches never race for a port. It
// never hangs: past --timeout every rank is killed and it exits 124.
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

[[noreturn]] void usage(const char *why) {
  std::fprintf(stderr,
               "ddpguard-launch: %s\n"
               "usage: ddpguard-launch --nproc N [--timeout SECONDS] "
               "[--allow-killed RANK] -- PROGRAM [ARGS...]\n",
               why);
  std::exit(2);
}

int to_int(const char *text, const char *what) {
  char *end = nullptr;
  long v = std::strtol(text, &end, 10);
  if (!*text || *end || v < 0 || v > 1 << 20)
    usage((std::string("bad value for ") + what).c_str());
  return static_cast<int>(v);
}

} // namespace

int main(int argc, char **argv) {
  int nproc = -1;
  double timeout_s = 600;
  std::vector<int> allow_killed;
  int i = 1;
  for (; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (i + 1 >= argc)
      usage(("missing value for " + arg).c_str());
    if (arg == "--nproc")
      nproc = to_int(argv[++i], "--nproc");
    else if (arg == "--timeout")
      timeout_s = to_int(argv[++i], "--timeout");
    else if (arg == "--allow-killed")
      allow_killed.push_back(to_int(argv[++i], "--allow-killed"));
    else
      usage(("unknown option " + arg).c_str());
  }
  if (nproc < 1)
    usage("--nproc N (N >= 1) is required");
  if (i >= argc)
    usage("no program given after --");

  c10d::TCPStoreOptions options;
  options.port = 0; // any free port
  options.isServer = true;
  options.waitWorkers = false;
  options.timeout = std::chrono::milliseconds(static_cast<long>(timeout_s * 1000));
  c10d::TCPStore store("127.0.0.1", options);
  const std::string port = std::to_string(store.getPort());

  std::vector<pid_t> pids;
  for (int rank = 0; rank < nproc; ++rank) {
    pid_t pid = fork();
    if (pid < 0) {
      std::perror("ddpguard-launch: fork");
      return 1;
    }
    if (pid == 0) {
      const std::string r = std::to_string(rank), n = std::to_string(nproc);
      setenv("RANK", r.c_str(), 1);
      setenv("LOCAL_RANK", r.c_str(), 1);
      setenv("GROUP_RANK", "0", 1);
      setenv("WORLD_SIZE", n.c_str(), 1);
      setenv("LOCAL_WORLD_SIZE", n.c_str(), 1);
      setenv("MASTER_ADDR", "127.0.0.1", 1);
      setenv("MASTER_PORT", port.c_str(), 1);
      setenv("TORCHELASTIC_USE_AGENT_STORE", "True", 1);
      setenv("TORCHELASTIC_RESTART_COUNT", "0", 1);
      execvp(argv[i], argv + i);
      std::fprintf(stderr, "ddpguard-launch: cannot run %s: %s\n", argv[i],
                   std::strerror(errno));
      _exit(127);
    }
    pids.push_back(pid);
  }

  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<long>(timeout_s * 1000));
  std::vector<int> status(nproc, -1);
  int running = nproc;
  while (running > 0) {
    bool reaped = false;
    for (int rank = 0; rank < nproc; ++rank) {
      if (status[rank] != -1)
        continue;
      int st = 0;
      if (waitpid(pids[rank], &st, WNOHANG) == pids[rank]) {
        status[rank] = st;
        --running;
        reaped = true;
      }
    }
    if (running == 0)
      break;
    if (std::chrono::steady_clock::now() > deadline) {
      std::fprintf(stderr, "ddpguard-launch: timed out after %.0f s; killing ranks:",
                   timeout_s);
      for (int rank = 0; rank < nproc; ++rank)
        if (status[rank] == -1) {
          std::fprintf(stderr, " %d", rank);
          kill(pids[rank], SIGKILL);
          waitpid(pids[rank], nullptr, 0);
        }
      std::fprintf(stderr, "\n");
      return 124;
    }
    if (!reaped)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }

  int failed = 0;
  for (int rank = 0; rank < nproc; ++rank) {
    const int st = status[rank];
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
      continue;
    bool allowed = false;
    for (int k : allow_killed)
      allowed |= k == rank && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL;
    if (allowed)
      continue;
    ++failed;
    if (WIFEXITED(st))
      std::fprintf(stderr, "ddpguard-launch: rank %d exited with status %d\n",
                   rank, WEXITSTATUS(st));
    else
      std::fprintf(stderr, "ddpguard-launch: rank %d was killed by signal %d\n",
                   rank, WTERMSIG(st));
  }
  return failed ? 1 : 0;
}
