// Training-step time of ddpguard::DistributedDataParallel on Gloo, one
// process per rank under torchrun:
//   ddpguard_step_bench STEPS HIDDEN BATCH DETECTOR(0|1)
// prints, from rank 0:
//   cpp_step_ms=<mean ms per step>            (default options)
//   detector_on_ms=<median> detector_off_ms=<median>   (if DETECTOR is 1)
// The detector figures alternate blocks of steps on two identical models
// (kWarn vs kSilent) so that drift affects both alike. torch_step_bench.py is
// the PyTorch side; run_benchmarks.sh runs both and prints the ratios.
#include "StepBenchModel.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

using namespace step_bench;

int main(int argc, char **argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s STEPS HIDDEN BATCH DETECTOR(0|1)\n", argv[0]);
    return 2;
  }
  const int steps = std::atoi(argv[1]);
  const int64_t hidden = std::atoll(argv[2]), batch = std::atoll(argv[3]);
  const bool detector = std::atoi(argv[4]) != 0;
  torch::set_num_threads(1);
  auto pg = ddpguard::init_process_group_from_env("gloo", std::chrono::seconds(60));
  torch::manual_seed(0);
  auto x = torch::randn({batch, hidden / 4});

  Mlp model(hidden);
  DDP ddp(model, pg);
  torch::optim::SGD opt(model->parameters(), 0.01);
  run_steps(ddp, opt, x, 5); // warm-up, bucket rebuild
  const double cpp = run_steps(ddp, opt, x, steps) / steps;
  if (pg->getRank() == 0)
    std::printf("cpp_step_ms=%.4f\n", cpp * 1e3);
  if (!detector)
    return 0;

  Mlp on_model(hidden), off_model(hidden);
  DDP on(on_model, pg, ddpguard::DDPOptions().hazard_detector(ddpguard::HazardAction::kWarn));
  DDP off(off_model, pg,
          ddpguard::DDPOptions().hazard_detector(ddpguard::HazardAction::kSilent));
  torch::optim::SGD on_opt(on_model->parameters(), 0.01);
  torch::optim::SGD off_opt(off_model->parameters(), 0.01);
  run_steps(on, on_opt, x, 5);
  run_steps(off, off_opt, x, 5);
  std::vector<double> on_t, off_t;
  const int block = std::max(1, steps / 5);
  for (int b = 0; b < 10; ++b) {
    on_t.push_back(run_steps(on, on_opt, x, block) / block);
    off_t.push_back(run_steps(off, off_opt, x, block) / block);
  }
  if (pg->getRank() == 0)
    std::printf("detector_on_ms=%.4f detector_off_ms=%.4f\n", median(on_t) * 1e3,
                median(off_t) * 1e3);
  return 0;
}
