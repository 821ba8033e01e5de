// DDP semantics checked against gradients computed locally for every rank's
// data (no DDP involved), plus the launch environment and the fault paths.
#include "TestSupport.h"

#include <arpa/inet.h>
#include <csignal>
#include <cstdlib>
#include <netinet/in.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace ddpguard;
using namespace ddpguard::test;

namespace {

using DDP = DistributedDataParallel<Net>;

torch::Tensor data_for(int rank, int step, int64_t rows = 6, int64_t cols = 4) {
  torch::manual_seed(1000 * step + rank);
  return torch::randn({rows, cols});
}

// Gradients of loss(net(x)) on a fresh, DDP-free replica with given weights.
std::vector<torch::Tensor> local_grads(const Net &weights, const torch::Tensor &x) {
  Net replica(static_cast<bool>(weights->bn1), weights->fc1->options.in_features(),
              weights->fc1->options.out_features(),
              weights->fc2->options.out_features());
  {
    torch::NoGradGuard no_grad;
    auto src = weights->parameters(), dst = replica->parameters();
    for (size_t i = 0; i < src.size(); ++i)
      dst[i].copy_(src[i]);
  }
  replica->forward(x).pow(2).mean().backward();
  std::vector<torch::Tensor> grads;
  for (auto &p : replica->parameters())
    grads.push_back(p.grad().clone());
  return grads;
}

void expect_close(const torch::Tensor &actual, const torch::Tensor &expected,
                  const std::string &what) {
  ASSERT_TRUE(actual.defined()) << what;
  EXPECT_TRUE(torch::allclose(actual, expected, 1e-5, 1e-7))
      << what << "\nactual\n" << actual << "\nexpected\n" << expected;
}

// The average over ranks of each rank's local gradients at `step`.
std::vector<torch::Tensor> averaged_grads(const Net &weights, int step,
                                          int64_t cols = 4) {
  std::vector<torch::Tensor> sum;
  const int world = launch_env().world_size;
  for (int r = 0; r < world; ++r) {
    auto g = local_grads(weights, data_for(r, step, 6, cols));
    if (sum.empty())
      sum = g;
    else
      for (size_t i = 0; i < g.size(); ++i)
        sum[i] += g[i];
  }
  for (auto &s : sum)
    s /= world;
  return sum;
}

struct BranchImpl : torch::nn::Module {
  BranchImpl()
      : used(register_module("used", torch::nn::Linear(4, 3))),
        unused(register_module("unused", torch::nn::Linear(4, 3))) {}
  torch::Tensor forward(torch::Tensor x) { return used(x); }
  torch::nn::Linear used, unused;
};
TORCH_MODULE(Branch);

struct ScaledImpl : torch::nn::Module {
  ScaledImpl() : fc(register_module("fc", torch::nn::Linear(4, 2))) {}
  torch::Tensor forward(torch::Tensor x, double scale) { return fc(x) * scale; }
  torch::nn::Linear fc;
};
TORCH_MODULE(Scaled);

} // namespace

TEST(Semantics, ConstructionBroadcastsRankZerosState) {
  Net net;
  init_weights(*net, 0.25 * launch_env().rank);
  {
    torch::NoGradGuard no_grad;
    net->bn1->running_mean.fill_(launch_env().rank + 1.0);
  }
  DDP ddp(net, test_group());
  Net reference;
  init_weights(*reference, 0.0);
  auto params = net->parameters(), expected = reference->parameters();
  for (size_t i = 0; i < params.size(); ++i)
    expect_close(params[i], expected[i], "parameter " + std::to_string(i));
  expect_close(net->bn1->running_mean, torch::ones({8}), "running_mean");
}

TEST(Semantics, GradientsAreAveragedAcrossRanks) {
  Net net(false);
  init_weights(*net, 0.0);
  DDP ddp(net, test_group());
  torch::optim::SGD sgd(net->parameters(), 0.1);
  for (int step = 0; step < 3; ++step) {
    auto expected = averaged_grads(net, step);
    sgd.zero_grad();
    ddp(data_for(launch_env().rank, step)).pow(2).mean().backward();
    auto params = net->parameters();
    for (size_t i = 0; i < params.size(); ++i)
      expect_close(params[i].grad(), expected[i],
                   "step " + std::to_string(step) + " grad " + std::to_string(i));
    sgd.step();
  }
}

// Small buckets: after the first backward the parameters are re-bucketed in
// gradient order into several buckets, each allreduced on its own.
TEST(Semantics, SmallBucketsAfterRebuild) {
  Net net(false, 4, 64, 3);
  init_weights(*net, 0.0);
  DDP ddp(net, test_group(), DDPOptions().bucket_cap_mb(0.0005));
  torch::optim::SGD sgd(net->parameters(), 0.05);
  for (int step = 0; step < 3; ++step) {
    auto expected = averaged_grads(net, step);
    sgd.zero_grad();
    ddp(data_for(launch_env().rank, step)).pow(2).mean().backward();
    auto params = net->parameters();
    for (size_t i = 0; i < params.size(); ++i)
      expect_close(params[i].grad(), expected[i],
                   "step " + std::to_string(step) + " grad " + std::to_string(i));
    sgd.step();
  }
}

TEST(Semantics, NoSyncAccumulatesLocallyThenSynchronises) {
  Net net(false);
  init_weights(*net, 0.0);
  DDP ddp(net, test_group());
  const int rank = launch_env().rank;
  auto local0 = local_grads(net, data_for(rank, 0));
  {
    auto guard = ddp.no_sync();
    ddp(data_for(rank, 0)).pow(2).mean().backward();
  }
  auto params = net->parameters();
  for (size_t i = 0; i < params.size(); ++i)
    expect_close(params[i].grad(), local0[i], "local grad " + std::to_string(i));
  auto avg0 = averaged_grads(net, 0), avg1 = averaged_grads(net, 1);
  ddp(data_for(rank, 1)).pow(2).mean().backward();
  for (size_t i = 0; i < params.size(); ++i)
    expect_close(params[i].grad(), avg0[i] + avg1[i],
                 "accumulated grad " + std::to_string(i));
}

TEST(Semantics, FindUnusedParameters) {
  Branch net;
  DistributedDataParallel<Branch> ddp(net, test_group(),
                                     DDPOptions().find_unused_parameters(true));
  for (int step = 0; step < 2; ++step) {
    ddp(data_for(launch_env().rank, step)).sum().backward();
    EXPECT_TRUE(net->used->weight.grad().defined());
    // Unused on every rank: .grad stays untouched (undefined), as in PyTorch.
    EXPECT_FALSE(net->unused->weight.grad().defined());
  }
}

TEST(Semantics, UnusedParameterWithoutSearchIsAClearError) {
  Branch net;
  DistributedDataParallel<Branch> ddp(net, test_group());
  ddp(data_for(launch_env().rank, 0)).sum().backward();
  try {
    ddp(data_for(launch_env().rank, 1));
    FAIL() << "expected an unfinished-reduction error";
  } catch (const std::exception &e) {
    const std::string what = error_text(e);
    EXPECT_NE(what.find("finished reduction in the prior iteration"), std::string::npos) << what;
    EXPECT_NE(what.find("unused.weight"), std::string::npos) << what;
    EXPECT_NE(what.find("find_unused_parameters(true)"), std::string::npos) << what;
  }
}

TEST(Semantics, ForwardGroupTupleArgumentsAndBatchSizes) {
  Scaled net;
  DistributedDataParallel<Scaled> ddp(net, test_group());
  auto x = torch::randn({6, 4}), y = torch::randn({3, 4});
  auto [a, b] = ddp.forward_group(std::make_tuple(x, 2.0), std::make_tuple(y, 3.0));
  EXPECT_TRUE(torch::allclose(a, net->forward(x, 2.0)));
  EXPECT_TRUE(torch::allclose(b, net->forward(y, 3.0)));
  EXPECT_EQ(b.size(0), 3);
  (a.sum() + b.sum()).backward();
  EXPECT_TRUE(net->fc->weight.grad().defined());
}

TEST(Semantics, OncePerBackwardBroadcastsFirstForwardOnly) {
  Net net;
  DDP ddp(net, test_group(),
          DDPOptions().buffer_broadcast(BufferBroadcast::kOncePerBackward));
  auto x = torch::randn({6, 4});
  for (int step = 0; step < 2; ++step) {
    auto o1 = ddp(x);
    EXPECT_TRUE(ddp.last_forward_broadcast());
    auto o2 = ddp(x);
    EXPECT_FALSE(ddp.last_forward_broadcast());
    (o1.sum() + o2.sum()).backward();
  }
}

namespace {

// Buffers that differ per rank before DDP is built, and whether they are
// rank 0's afterwards (only decidable on more than one rank).
bool buffers_synced_at_construction(const DDPOptions &options) {
  Net net;
  net->eval();
  {
    torch::NoGradGuard no_grad;
    net->bn1->running_mean.fill_(launch_env().rank + 1.0);
  }
  DDP ddp(net, test_group(), options);
  return net->bn1->running_mean.eq(1.0).all().item<bool>();
}

// Collects the warnings c10 raises while it lives.
struct CollectWarnings : c10::WarningHandler {
  std::vector<std::string> seen;
  c10::WarningUtils::WarningHandlerGuard guard{this};
  void process(const c10::Warning &w) override { seen.push_back(w.msg()); }
};

} // namespace

// From 2.12.1 the buffer broadcast puts the version counters back, as
// PyTorch's _sync_buffers does with _unsafe_preserve_version_counter; before,
// its in-place copy bumps them.
TEST(Semantics, BroadcastVersionCountersPerTorchVersion) {
  Net net;
  net->eval(); // BatchNorm's own update would bump the counters too
  DDP ddp(net, test_group(), DDPOptions().hazard_detector(HazardAction::kSilent));
  const auto before = net->bn1->running_mean._version();
  ddp(torch::randn({6, 4}));
  ASSERT_TRUE(ddp.last_forward_broadcast());
  if (DDPGUARD_BUFFER_SYNC_PRESERVES_VERSIONS)
    EXPECT_EQ(net->bn1->running_mean._version(), before);
  else
    EXPECT_GT(net->bn1->running_mean._version(), before);
}

// PyTorch's init sync: broadcast_buffers(false) leaves the buffers out of the
// construction's broadcast; from 2.13 forward_sync_buffers(false) does not.
TEST(Semantics, InitSyncOfBuffersFollowsPyTorch) {
  if (launch_env().world_size < 2)
    GTEST_SKIP() << "needs two ranks to tell synced buffers from local ones";
  EXPECT_TRUE(buffers_synced_at_construction(DDPOptions()));
  EXPECT_EQ(buffers_synced_at_construction(DDPOptions().broadcast_buffers(false)),
            launch_env().rank == 0);
#if DDPGUARD_HAS_FORWARD_SYNC_BUFFERS
  EXPECT_TRUE(buffers_synced_at_construction(DDPOptions().forward_sync_buffers(false)));
  EXPECT_TRUE(buffers_synced_at_construction(
      DDPOptions().forward_sync_buffers(false).broadcast_buffers(false)));
#endif
}

#if DDPGUARD_HAS_FORWARD_SYNC_BUFFERS
// 2.13's forward_sync_buffers decides the per-forward broadcast;
// broadcast_buffers is its deprecated alias, warned about as PyTorch does.
TEST(Semantics, ForwardSyncBuffersAndDeprecatedAlias) {
  auto broadcasts = [](const DDPOptions &options, std::vector<std::string> &warnings) {
    CollectWarnings collect;
    Net net;
    DDP ddp(net, test_group(), options);
    ddp(torch::randn({6, 4}));
    warnings = collect.seen;
    return ddp.last_forward_broadcast();
  };
  std::vector<std::string> w;
  EXPECT_TRUE(broadcasts(DDPOptions(), w));
  EXPECT_TRUE(w.empty());
  EXPECT_FALSE(broadcasts(DDPOptions().forward_sync_buffers(false), w));
  EXPECT_TRUE(w.empty());
  EXPECT_FALSE(broadcasts(DDPOptions().broadcast_buffers(false), w));
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("broadcast_buffers is deprecated. Use forward_sync_buffers"),
            std::string::npos)
      << w[0];
  EXPECT_TRUE(broadcasts(
      DDPOptions().broadcast_buffers(false).forward_sync_buffers(true), w));
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("its value is ignored"), std::string::npos) << w[0];
}
#endif

#if DDPGUARD_HAS_BATCHED_GRAD_COPY
// The Reducer options of newer LibTorch change how gradients reach the
// buckets, not their values.
TEST(Semantics, ReducerOptionsKeepGradients) {
  auto grads = [](DDPOptions options) {
    Net net;
    init_weights(*net, 0.0);
    DDP ddp(net, test_group(), options);
    ddp(data_for(launch_env().rank, 0)).pow(2).mean().backward();
    std::vector<torch::Tensor> out;
    for (auto &p : net->parameters())
      out.push_back(p.grad().clone());
    return out;
  };
  const auto plain = grads(DDPOptions());
  DDPOptions options;
  options.batched_grad_copy(true);
#if DDPGUARD_HAS_LAZY_BUCKET_ALLOCATION
  options.lazy_bucket_allocation(true);
#endif
  const auto other = grads(options);
  ASSERT_EQ(plain.size(), other.size());
  for (size_t i = 0; i < plain.size(); ++i)
    EXPECT_TRUE(torch::allclose(plain[i], other[i], 1e-6, 1e-7)) << i;
}
#endif

TEST(Env, InitProcessGroupFromEnv) {
  auto pg = init_process_group_from_env("gloo", kTestTimeout);
  EXPECT_EQ(pg->getRank(), launch_env().rank);
  EXPECT_EQ(pg->getSize(), launch_env().world_size);
  std::vector<at::Tensor> t{torch::ones({3})};
  pg->allreduce(t)->wait();
  EXPECT_TRUE(torch::equal(t[0], torch::full({3}, float(launch_env().world_size))));
}

// A survivor writing to a dead peer's socket must get an error, not be
// ended by SIGPIPE; a handler the program installed stays.
TEST(Env, ProcessGroupIgnoresDefaultSigpipe) {
  std::signal(SIGPIPE, SIG_DFL);
  test_group();
  struct sigaction current {};
  ASSERT_EQ(sigaction(SIGPIPE, nullptr, &current), 0);
  EXPECT_EQ(current.sa_handler, SIG_IGN);

  static volatile std::sig_atomic_t handled = 0;
  auto own = +[](int) { handled = 1; };
  std::signal(SIGPIPE, own);
  test_group();
  ASSERT_EQ(sigaction(SIGPIPE, nullptr, &current), 0);
  EXPECT_EQ(current.sa_handler, own);
  std::signal(SIGPIPE, SIG_IGN);
}

namespace {
// Sets environment variables for one test and restores them afterwards.
class EnvOverride {
public:
  void set(const char *name, const char *value) {
    const char *old = std::getenv(name);
    saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~EnvOverride() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->second)
        setenv(it->first.c_str(), it->second->c_str(), 1);
      else
        unsetenv(it->first.c_str());
    }
  }

private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
} // namespace

TEST(Env, MissingVariableIsNamed) {
  EnvOverride env;
  env.set("MASTER_PORT", nullptr);
  try {
    init_process_group_from_env("gloo", kTestTimeout);
    FAIL() << "expected an error";
  } catch (const std::invalid_argument &e) {
    EXPECT_NE(std::string(e.what()).find("MASTER_PORT"), std::string::npos) << e.what();
  }
}

TEST(Faults, PortInUse) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = 0;
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr *>(&addr), &len);
  const std::string port = std::to_string(ntohs(addr.sin_port));

  EnvOverride env;
  env.set("RANK", "0");
  env.set("WORLD_SIZE", "1");
  env.set("MASTER_ADDR", "127.0.0.1");
  env.set("MASTER_PORT", port.c_str());
  env.set("TORCHELASTIC_USE_AGENT_STORE", nullptr);
  const auto t0 = std::chrono::steady_clock::now();
  try {
    init_process_group_from_env("gloo", std::chrono::seconds(5));
    FAIL() << "expected an error";
  } catch (const std::runtime_error &e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("127.0.0.1:" + port), std::string::npos) << what;
    EXPECT_NE(what.find("rank 0 of 1 (hosting the store)"), std::string::npos) << what;
    EXPECT_NE(what.find("ddress already in use"), std::string::npos) << what;
  }
  EXPECT_LT(seconds_since(t0), 20.0);
  close(fd);
}

// Rank 0 hosts the store for a world of 2, but rank 1 never comes.
TEST(Faults, MissingPeerAtRendezvousTimesOut) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr), 0);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr *>(&addr), &len);
  const std::string port = std::to_string(ntohs(addr.sin_port));
  close(fd); // a port that was free a moment ago

  EnvOverride env;
  env.set("RANK", "0");
  env.set("WORLD_SIZE", "2");
  env.set("MASTER_ADDR", "127.0.0.1");
  env.set("MASTER_PORT", port.c_str());
  env.set("TORCHELASTIC_USE_AGENT_STORE", nullptr);
  const auto t0 = std::chrono::steady_clock::now();
  try {
    init_process_group_from_env("gloo", std::chrono::seconds(2));
    FAIL() << "expected an error";
  } catch (const std::runtime_error &e) {
    const std::string what = e.what();
    // The store waits for its clients, within the timeout.
    EXPECT_NE(what.find("failed for rank 0 of 2 (hosting the store) within 2000 ms"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("1/2 clients joined"), std::string::npos) << what;
    std::cout << "error: " << what << "\n";
  }
  // The store counts its timeout in whole seconds: within the timeout, rounded up.
  EXPECT_LT(seconds_since(t0), 4.0);
}

// Rank 1 of 2 while nobody hosts the store.
TEST(Faults, UnreachableStoreTimesOut) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr), 0);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr *>(&addr), &len);
  const std::string port = std::to_string(ntohs(addr.sin_port));
  close(fd);

  EnvOverride env;
  env.set("RANK", "1");
  env.set("WORLD_SIZE", "2");
  env.set("MASTER_ADDR", "127.0.0.1");
  env.set("MASTER_PORT", port.c_str());
  env.set("TORCHELASTIC_USE_AGENT_STORE", nullptr);
  const auto t0 = std::chrono::steady_clock::now();
  try {
    init_process_group_from_env("gloo", std::chrono::seconds(2));
    FAIL() << "expected an error";
  } catch (const std::runtime_error &e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("127.0.0.1:" + port + " (MASTER_ADDR:MASTER_PORT) failed for "
                        "rank 1 of 2 (connecting to the store) within 2000 ms"),
              std::string::npos)
        << what;
    std::cout << "error: " << what << "\n";
  }
  EXPECT_LT(seconds_since(t0), 20.0);
}

// Ranks started with different WORLD_SIZE values: this process is rank 0 of
// 2, a copy of it (this test again, as the peer) rank 1 of 3. Both fail
// naming the two sizes, within the 15 s timeout, not later in Gloo's
// connectFullMesh.
TEST(Faults, WorldSizeMismatchFailsWithinTheTimeout) {
  const std::chrono::seconds timeout(15);
  if (std::getenv("DDPGUARD_TEST_WORLD_SIZE_PEER")) {
    try {
      init_process_group_from_env("gloo", timeout);
    } catch (const std::runtime_error &e) {
      const std::string what = e.what();
      std::_Exit(what.find("rank 1 was started with WORLD_SIZE=3 but rank 0 "
                           "with WORLD_SIZE=2") == std::string::npos);
    }
    std::_Exit(2);
  }
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr), 0);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr *>(&addr), &len);
  const std::string port = std::to_string(ntohs(addr.sin_port));
  close(fd);

  EnvOverride env;
  env.set("MASTER_ADDR", "127.0.0.1");
  env.set("MASTER_PORT", port.c_str());
  env.set("TORCHELASTIC_USE_AGENT_STORE", nullptr);
  env.set("RANK", "1");
  env.set("WORLD_SIZE", "3");
  env.set("DDPGUARD_TEST_WORLD_SIZE_PEER", "1");
  const std::string filter =
      "--gtest_filter=Faults.WorldSizeMismatchFailsWithinTheTimeout";
  char *argv[] = {const_cast<char *>("/proc/self/exe"),
                  const_cast<char *>(filter.c_str()), nullptr};
  pid_t peer = 0;
  ASSERT_EQ(posix_spawn(&peer, "/proc/self/exe", nullptr, nullptr, argv,
                        environ),
            0);
  env.set("DDPGUARD_TEST_WORLD_SIZE_PEER", nullptr);
  env.set("RANK", "0");
  env.set("WORLD_SIZE", "2");
  const auto t0 = std::chrono::steady_clock::now();
  try {
    init_process_group_from_env("gloo", timeout);
    ADD_FAILURE() << "expected an error";
  } catch (const std::runtime_error &e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("rank 0 was started with WORLD_SIZE=2 but rank 1 with "
                        "WORLD_SIZE=3"),
              std::string::npos)
        << what;
    std::cout << "error after " << seconds_since(t0) << " s: " << what << "\n";
  }
  EXPECT_LT(seconds_since(t0), 15.0);
  int status = 0;
  ASSERT_EQ(waitpid(peer, &status, 0), peer);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "the peer did not name the mismatch (status " << status << ")";
}

TEST(Faults, MismatchedParameterCount) {
  Net net(launch_env().rank == 0); // only rank 0 has the BatchNorm
  if (launch_env().world_size == 1)
    GTEST_SKIP() << "needs two ranks";
  try {
    DDP ddp(net, test_group());
    FAIL() << "expected a model mismatch error";
  } catch (const std::exception &e) {
    const std::string what = error_text(e);
    EXPECT_NE(what.find("differs across ranks"), std::string::npos) << what;
    EXPECT_NE(what.find("rank 0 has 9 parameters and buffers, rank 1 has 4"),
              std::string::npos)
        << what;
  }
}

TEST(Faults, MismatchedParameterShape) {
  Net net(true, 4, launch_env().rank == 0 ? 8 : 16);
  if (launch_env().world_size == 1)
    GTEST_SKIP() << "needs two ranks";
  try {
    DDP ddp(net, test_group());
    FAIL() << "expected a model mismatch error";
  } catch (const std::exception &e) {
    const std::string what = error_text(e);
    EXPECT_NE(what.find("'fc1.weight' is [8, 4] Float on rank 0 but "
                        "[16, 4] Float on rank 1"),
              std::string::npos)
        << what;
  }
}

namespace {
// A module whose buffers differ across ranks in shape or number, with the
// same parameters: without the check, rank 0's broadcast would shift bytes
// into the wrong buffers and training would go on.
struct BuffersImpl : torch::nn::Module {
  BuffersImpl(int64_t scale_size, bool extra)
      : fc(register_module("fc", torch::nn::Linear(4, 3))) {
    register_buffer("scale", torch::ones({scale_size}));
    if (extra)
      register_buffer("extra", torch::zeros({2}));
  }
  torch::Tensor forward(torch::Tensor x) { return fc(x); }
  torch::nn::Linear fc;
};
TORCH_MODULE(Buffers);

std::string construction_error(Buffers net) {
  try {
    DistributedDataParallel<Buffers> ddp(net, test_group());
  } catch (const std::exception &e) {
    return error_text(e);
  }
  return "";
}
} // namespace

TEST(Faults, MismatchedBufferShape) {
  if (launch_env().world_size == 1)
    GTEST_SKIP() << "needs two ranks";
  const std::string what =
      construction_error(Buffers(launch_env().rank == 0 ? 1 : 2, false));
  EXPECT_NE(what.find("'scale' is [1] Float on rank 0 but [2] Float on rank 1"),
            std::string::npos)
      << what;
}

TEST(Faults, ExtraBufferOnOneRank) {
  if (launch_env().world_size == 1)
    GTEST_SKIP() << "needs two ranks";
  const std::string what =
      construction_error(Buffers(1, launch_env().rank == 1));
  EXPECT_NE(what.find("rank 0 has 3 parameters and buffers, rank 1 has 4"),
            std::string::npos)
      << what;
}

TEST(Faults, ForwardGroupInputWithWrongShape) {
  Net net;
  DDP ddp(net, test_group());
  try {
    ddp.forward_group(torch::randn({6, 4}), torch::randn({6, 5}));
    FAIL() << "expected an error";
  } catch (const std::runtime_error &e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("forward_group: inner forward #1 (inputs: [6, 5] Float)"),
              std::string::npos)
        << what;
  }
  // The DDP stays usable: nothing was half-synchronised.
  auto [a, b] = ddp.forward_group(torch::randn({6, 4}), torch::randn({2, 4}));
  EXPECT_NO_THROW((a.sum() + b.sum()).backward());
}

// The last rank dies between forward and backward (launched with
// --allow-killed for it); the others fail in the gradient allreduce, naming
// it, well within the group timeout.
TEST(Faults, RankKilledMidStep) {
  const int victim = launch_env().world_size - 1;
  Net net(false);
  DDP ddp(net, test_group(std::chrono::seconds(15)));
  auto out = ddp(data_for(launch_env().rank, 0));
  if (launch_env().rank == victim)
    raise(SIGKILL);
  const auto t0 = std::chrono::steady_clock::now();
  try {
    out.pow(2).mean().backward();
    FAIL() << "expected the allreduce to fail";
  } catch (const std::exception &e) {
    const std::string what = error_text(e);
    EXPECT_NE(what.find("the gradient allreduce of bucket 0 (fc1.weight"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("failed on rank"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("a rank died or exited early"), std::string::npos) << what;
  }
  EXPECT_LT(seconds_since(t0), 20.0);
}

// Run only by torchrun_two_nodes.sh, with exceptions left uncaught: the
// hazard report and autograd's error must reach torchrun's failure summary
// through TORCHELASTIC_ERROR_FILE.
TEST(Elastic, DISABLED_UncaughtErrorReachesTorchrun) {
  auto pg = init_process_group_from_env("gloo", kTestTimeout);
  Net net;
  DDP ddp(net, pg);
  auto o1 = ddp(data_for(launch_env().rank, 0));
  if (!kBroadcastFailsBackward) {
    // From 2.12.1 the broadcast fails nothing; a write of the saved buffer
    // by the program itself still does (the detector names the write).
    torch::NoGradGuard no_grad;
    net->bn1->running_mean.add_(0.0);
  }
  auto o2 = ddp(data_for(launch_env().rank, 1));
  (o1.sum() + o2.sum()).backward();
}
