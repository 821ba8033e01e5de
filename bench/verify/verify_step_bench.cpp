// Per-step cost of the verification mode on a small model, 2 Gloo ranks
// under torchrun, same run:
//   ddpguard_verify_step_bench STEPS HIDDEN BATCH [aa]
// Two identical DDPs in one process, one constructed with DDPGUARD_VERIFY=1
// and one without; 40 short blocks of training steps alternate between them
// (in both orders) so that drift in the machine's load affects both alike.
// Rank 0 prints
//   verify_on_ms=<median> verify_off_ms=<median> cost=<median of on/off - 1 per block pair>
//   verifier_ms_per_step=<its own clock> direct_cost=<that / unverified step> exchanges=<n>
//   bytes_hashed_per_step=<n>
#include "../runtime/StepBenchModel.h"
#include <ddpguard/runtime/Verify.h>

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <unistd.h>
#include <string>

using namespace step_bench;

int main(int argc, char **argv) {
  if (argc != 4 && !(argc == 5 && std::string(argv[4]) == "aa")) {
    std::fprintf(stderr, "usage: %s STEPS HIDDEN BATCH [aa]\n", argv[0]);
    return 2;
  }
  // "aa": both DDPs unverified, to see the noise floor of the comparison.
  const bool control = argc == 5;
  const int steps = std::atoi(argv[1]);
  const int64_t hidden = std::atoll(argv[2]), batch = std::atoll(argv[3]);
  torch::set_num_threads(1);
  ::unsetenv("DDPGUARD_VERIFY_PROGRESS");
  auto pg = ddpguard::init_process_group_from_env("gloo", std::chrono::seconds(60));
  torch::manual_seed(pg->getRank());
  auto x = torch::randn({batch, hidden / 4});
  // The verifier's own clock comes from its summary.
  const std::string summary = "/tmp/ddpguard-verify-step-bench." +
                              std::to_string(::getppid()) + ".rank%r.json";
  ::setenv("DDPGUARD_VERIFY_JSON", summary.c_str(), 1);

  Mlp on_model(hidden), off_model(hidden);
  if (!control)
    ::setenv("DDPGUARD_VERIFY", "1", 1);
  auto on_ddp = std::make_unique<DDP>(on_model, pg);
  DDP &on = *on_ddp;
  ::unsetenv("DDPGUARD_VERIFY");
  DDP off(off_model, pg);
  torch::optim::SGD on_opt(on_model->parameters(), 0.01);
  torch::optim::SGD off_opt(off_model->parameters(), 0.01);
  run_steps(on, on_opt, x, 5); // warm-up, bucket rebuild
  run_steps(off, off_opt, x, 5);
  // Many short alternating blocks (the order flips every pair), medians.
  std::vector<double> on_t, off_t;
  const int blocks = 40;
  const int block = std::max(1, steps / blocks);
  for (int b = 0; b < blocks; ++b) {
    if (b % 2) {
      on_t.push_back(run_steps(on, on_opt, x, block) / block);
      off_t.push_back(run_steps(off, off_opt, x, block) / block);
    } else {
      off_t.push_back(run_steps(off, off_opt, x, block) / block);
      on_t.push_back(run_steps(on, on_opt, x, block) / block);
    }
  }
  size_t bytes = 0;
  for (const auto &p : on_model->parameters())
    bytes += 2 * p.numel() * p.element_size(); // gradients and parameters
  on_ddp.reset(); // writes the final summary
  // The cost: the median over adjacent block pairs of on/off - 1 (robust to
  // drift in the machine's load); the medians of each side for scale.
  std::vector<double> ratios;
  for (size_t i = 0; i < on_t.size(); ++i)
    ratios.push_back(on_t[i] / off_t[i] - 1.0);
  if (pg->getRank() == 0) {
    const double a = median(on_t), b = median(off_t);
    std::printf("verify_on_ms=%.4f verify_off_ms=%.4f cost=%.4f\n", a * 1e3, b * 1e3,
                median(ratios));
    // The verifier's own time per step (hashing, exchanges, comparisons) over
    // the unverified step: what verification costs this rank directly.
    std::string path = summary;
    path.replace(path.find("%r"), 2, "0");
    std::ifstream in(path);
    const std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto number = [&](const std::string &key) {
      const auto at = json.find("\"" + key + "\": ");
      return at == std::string::npos ? -1.0 : std::atof(json.c_str() + at + key.size() + 4);
    };
    const double seconds = number("verify_seconds"), done = number("steps_completed");
    if (seconds >= 0 && done > 0)
      std::printf("verifier_ms_per_step=%.4f direct_cost=%.4f exchanges=%.0f\n",
                  seconds / done * 1e3, seconds / done / b, number("exchanges"));
    std::printf("bytes_hashed_per_step=%zu\n", bytes);
  }
  for (int r = 0; r < pg->getSize(); ++r) {
    std::string path = summary;
    path.replace(path.find("%r"), 2, std::to_string(r));
    if (r == pg->getRank())
      std::remove(path.c_str());
  }
  return 0;
}
