// Shared helpers of the multi-process runtime tests: every test binary runs as
// one rank under ddpguard-launch, which hosts the rendezvous store.
#pragma once

#include <ddpguard/runtime/DistributedDataParallel.h>

#include <gtest/gtest.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <string>

namespace ddpguard::test {

// Collectives in tests give up after this, so a broken test fails instead of
// hanging (the launcher's --timeout is the outer bound).
constexpr std::chrono::milliseconds kTestTimeout{20000};

inline const LaunchEnv &launch_env() {
  static const LaunchEnv env = read_launch_env();
  return env;
}

// A fresh Gloo group for the running test, on its own store prefix, so that
// every test of a run gets independent collectives.
inline ProcessGroupPtr test_group(std::chrono::milliseconds timeout = kTestTimeout) {
  static c10::intrusive_ptr<c10d::Store> base = [] {
    c10d::TCPStoreOptions options;
    options.port = static_cast<std::uint16_t>(launch_env().master_port);
    options.isServer = false;
    options.timeout = kTestTimeout;
    return c10::make_intrusive<c10d::TCPStore>(launch_env().master_addr, options);
  }();
  const auto *info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = std::string(info->test_suite_name()) + "." + info->name();
  static int counter = 0; // several groups in one test
  name += "#" + std::to_string(counter++);
  return new_process_group("gloo", c10::make_intrusive<c10d::PrefixStore>(name, base),
                           launch_env().rank, launch_env().world_size, timeout);
}

// Linear -> (BatchNorm1d) -> ReLU -> Linear; the model of every test and of
// torch_reference.py.
struct NetImpl : torch::nn::Module {
  explicit NetImpl(bool with_bn = true, int64_t in = 4, int64_t hidden = 8,
                   int64_t out = 3)
      : fc1(register_module("fc1", torch::nn::Linear(in, hidden))),
        fc2(register_module("fc2", torch::nn::Linear(hidden, out))) {
    if (with_bn)
      bn1 = register_module("bn1", torch::nn::BatchNorm1d(hidden));
  }
  torch::Tensor forward(torch::Tensor x) {
    x = fc1(x);
    if (bn1)
      x = bn1(x);
    return fc2(torch::relu(x));
  }
  torch::nn::Linear fc1;
  torch::nn::BatchNorm1d bn1{nullptr};
  torch::nn::Linear fc2;
};
TORCH_MODULE(Net);

// Deterministic weights, identical to torch_reference.py's: parameter k
// (registration order), element j = 0.5 * sin(0.7 j + 1.3 k + 0.1) + offset.
// A rank-dependent offset shows that construction broadcasts rank 0's.
inline void init_weights(torch::nn::Module &m, double offset) {
  torch::NoGradGuard no_grad;
  int k = 0;
  for (auto &p : m.parameters()) {
    auto flat = torch::arange(p.numel(), torch::kDouble);
    p.copy_((0.5 * torch::sin(0.7 * flat + 1.3 * k + 0.1) + offset)
                .to(p.scalar_type())
                .view(p.sizes()));
    ++k;
  }
}

// Whether the per-forward buffer broadcast can fail a backward on the
// LibTorch these tests are built against: until 2.12.0 it bumps the buffers'
// version counters; from 2.12.1 it preserves them, as PyTorch's DDP does, and
// every row of docs/ground-truth.md trains (torch_ground_truth.py measures
// PyTorch's side; the C++ rows are compared with it).
constexpr bool kBroadcastFailsBackward = !DDPGUARD_BUFFER_SYNC_PRESERVES_VERSIONS;

inline bool is_inplace_error(const std::string &what) {
  return what.find("modified by an inplace operation") != std::string::npos;
}

// The in-place error explainer is silent for its lifetime: a run without any
// report of ddpguard's, the oracle of the detector and explainer tests.
struct WithoutExplainer {
  WithoutExplainer() { setenv("DDPGUARD_EXPLAIN", "0", 1); }
  ~WithoutExplainer() { unsetenv("DDPGUARD_EXPLAIN"); }
  WithoutExplainer(const WithoutExplainer &) = delete;
  WithoutExplainer &operator=(const WithoutExplainer &) = delete;
};

inline std::string error_text(const std::exception &e) {
  if (auto *c = dynamic_cast<const c10::Error *>(&e))
    return c->what_without_backtrace();
  return e.what();
}

} // namespace ddpguard::test
