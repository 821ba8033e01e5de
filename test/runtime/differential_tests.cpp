// Differential tests against PyTorch's Python DDP: torch_reference.py ran the
// same scenario first (same model, weights, per-rank data and SGD steps) and
// left each rank's parameters and buffers, or its error, in
// $DDPGUARD_REFERENCE_DIR/rank<R>.txt. This rank runs the C++ side and
// compares (1e-5 relative).
#include "TestSupport.h"

#include <fstream>
#include <map>
#include <regex>
#include <sstream>

using namespace ddpguard;
using namespace ddpguard::test;

namespace {

constexpr int kSteps = 3;

std::pair<torch::Tensor, torch::Tensor> views(int step, int rank) {
  torch::manual_seed(1000 * step + rank);
  auto x1 = torch::randn({6, 4});
  auto x2 = torch::randn({6, 4});
  return {x1, x2};
}

torch::Tensor two_view_loss(const torch::Tensor &z1, const torch::Tensor &z2) {
  return (z1 - z2).pow(2).mean() + 0.1 * z1.mean();
}

struct Reference {
  std::string error;
  std::map<std::string, std::vector<double>> values;
};

Reference read_reference() {
  const char *dir = std::getenv("DDPGUARD_REFERENCE_DIR");
  if (!dir)
    throw std::runtime_error("DDPGUARD_REFERENCE_DIR is not set");
  const std::string path =
      std::string(dir) + "/rank" + std::to_string(launch_env().rank) + ".txt";
  std::ifstream in(path);
  if (!in)
    throw std::runtime_error("cannot read the PyTorch reference " + path);
  Reference ref;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("error ", 0) == 0) {
      ref.error = line.substr(6);
      continue;
    }
    std::istringstream fields(line);
    std::string name;
    fields >> name;
    double v;
    while (fields >> v)
      ref.values[name].push_back(v);
  }
  return ref;
}

// "[<type> [8]] is at version 4; expected version 3": the clobbered tensor's
// shape and both version counters, which PyTorch and we must agree on.
std::string version_clause(const std::string &error) {
  std::smatch m;
  static const std::regex re(R"(\[\S+ (\[[0-9, ]*\])\] is at version (\d+); expected version (\d+))");
  if (!std::regex_search(error, m, re))
    return "<no version clause in: " + error + ">";
  return m[1].str() + " version " + m[2].str() + " expected " + m[3].str();
}

} // namespace

TEST(Differential, MatchesPyTorch) {
  const char *scenario_env = std::getenv("DDPGUARD_SCENARIO");
  ASSERT_NE(scenario_env, nullptr) << "DDPGUARD_SCENARIO is not set";
  const std::string scenario = scenario_env;
  const int rank = launch_env().rank;
  const Reference ref = read_reference();

  Net net;
  init_weights(*net, 0.01 * rank);
  DDPOptions options;
  if (scenario == "broadcast_off")
    options.broadcast_buffers(false);
  if (scenario == "once_per_backward")
    options.buffer_broadcast(BufferBroadcast::kOncePerBackward);
  DistributedDataParallel<Net> ddp(net, test_group(), options);
  torch::optim::SGD opt(net->parameters(),
                        torch::optim::SGDOptions(0.1).momentum(0.9));
  std::string error;
  try {
    for (int step = 0; step < kSteps; ++step) {
      auto [x1, x2] = views(step, rank);
      opt.zero_grad();
      if (scenario == "standard") {
        ddp(x1).pow(2).mean().backward();
      } else if (scenario == "no_sync") {
        {
          auto guard = ddp.no_sync();
          ddp(x1).pow(2).mean().backward();
        }
        ddp(x2).pow(2).mean().backward();
      } else if (scenario == "forward_group") {
        auto [z1, z2] = ddp.forward_group(x1, x2);
        two_view_loss(z1, z2).backward();
      } else if (scenario == "broadcast_off" || scenario == "two_forwards" ||
                 scenario == "once_per_backward") {
        auto z1 = ddp(x1);
        auto z2 = ddp(x2);
        two_view_loss(z1, z2).backward();
      } else {
        FAIL() << "unknown scenario " << scenario;
      }
      opt.step();
    }
  } catch (const std::exception &e) {
    error = error_text(e);
  }

  if (!ref.error.empty() || !error.empty()) {
    ASSERT_FALSE(ref.error.empty()) << "PyTorch ran, we failed: " << error;
    ASSERT_FALSE(error.empty()) << "PyTorch failed, we ran: " << ref.error;
    EXPECT_TRUE(is_inplace_error(ref.error)) << ref.error;
    EXPECT_TRUE(is_inplace_error(error)) << error;
    EXPECT_EQ(version_clause(error), version_clause(ref.error))
        << "ours: " << error << "\nPyTorch: " << ref.error;
    return;
  }

  size_t compared = 0;
  auto compare = [&](const std::string &name, const torch::Tensor &t) {
    auto it = ref.values.find(name);
    ASSERT_NE(it, ref.values.end()) << name << " missing from the reference";
    auto expected = torch::tensor(it->second, torch::kDouble);
    auto actual = t.detach().reshape(-1).to(torch::kDouble);
    ASSERT_EQ(actual.numel(), expected.numel()) << name;
    EXPECT_TRUE(torch::allclose(actual, expected, 1e-5, 1e-7))
        << name << " on rank " << rank << "\nours\n" << actual << "\nPyTorch\n"
        << expected;
    ++compared;
  };
  for (const auto &item : net->named_parameters())
    compare(item.key(), item.value());
  for (const auto &item : net->named_buffers())
    compare(item.key(), item.value());
  EXPECT_EQ(compared, ref.values.size());
}
