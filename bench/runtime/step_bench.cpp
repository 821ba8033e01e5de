// Training-step time of ddpguard::DistributedDataParallel on Gloo, one
// process per rank under torchrun:
//   ddpguard_step_bench STEPS HIDDEN BATCH DETECTOR(0|1|2)
// prints, from rank 0:
//   cpp_step_ms=<mean ms per step>            (default options, SGD)
//   detector_on_ms=<median> detector_off_ms=<median> detector_ratio=<median
//   of the paired blocks' on/off ratios> detector_cpu_ratio=<the same, of the
//   main thread's CPU time> explainer_cpu_ratio=<the in-place error
//   explainer's engine against autograd's base engine, likewise>
//   (if DETECTOR is 1)
//   silent_on_ms=<median> silent_off_ms=<median> silent_ratio=<median of the
//   paired blocks' ratios> silent_cpu_ratio=<the same, of the main thread's
//   CPU time>: the detector with silent_writes against without (if DETECTOR
//   is 2)
// The detector figures alternate blocks of clean steps (forward, backward,
// Adam step) on two identical models (kWarn vs kSilent), the order flipped
// every block, so that drift affects both alike. Adam bumps every
// parameter's version counter each step, as most optimizers do, so the
// detector's per-forward snapshot and per-backward comparison of the module's
// parameter and buffer versions do their full work. torch_step_bench.py is
// the PyTorch side; run_benchmarks.sh runs both and prints the ratios.
#include "StepBenchModel.h"

#include <torch/csrc/autograd/engine.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>

using namespace step_bench;

namespace {

double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

struct DetectorFigures {
  double on_ms, off_ms;        // wall per step, medians
  double wall_ratio, cpu_ratio; // medians of the paired blocks' on/off ratios
  double cpu_extra_us;         // median of the pairs' (on - off) CPU per step
  double off_cpu_us;           // main-thread CPU per step without detector
};

// Clean steps (forward, backward, Adam step) on two identical models, kWarn
// vs kSilent, in many short paired blocks (the order flipped every block):
// the ratio of each pair, whose halves ran back to back, is robust to load
// that changes over seconds. The main thread's CPU time (forward, the
// detector's hooks, backward: LibTorch runs a CPU backward on the calling
// thread) is less sensitive to other processes than wall time, which waits
// for the allreduce. Adam bumps every parameter's version counter each step,
// as most optimizers do, so the detector's per-forward snapshot and
// per-backward comparison of versions do their full work.
DetectorFigures compare_detector(const ddpguard::ProcessGroupPtr &pg, int64_t hidden,
                                 int64_t batch, int block, int pairs,
                                 const ddpguard::DDPOptions &on_options,
                                 const ddpguard::DDPOptions &off_options) {
  auto x = torch::randn({batch, hidden / 4});
  Mlp on_model(hidden), off_model(hidden);
  DDP on(on_model, pg, on_options);
  DDP off(off_model, pg, off_options);
  torch::optim::Adam on_opt(on_model->parameters(), torch::optim::AdamOptions(1e-4));
  torch::optim::Adam off_opt(off_model->parameters(), torch::optim::AdamOptions(1e-4));
  run_steps(on, on_opt, x, 5);
  run_steps(off, off_opt, x, 5);
  auto timed = [&](DDP &ddp, torch::optim::Optimizer &opt, double &cpu) {
    const double cpu0 = thread_cpu_seconds();
    const double wall = run_steps(ddp, opt, x, block);
    cpu = thread_cpu_seconds() - cpu0;
    return wall;
  };
  std::vector<double> on_t, off_t, ratios, cpu_ratios, extra, off_cpu;
  for (int b = 0; b < pairs; ++b) {
    const bool on_first = b % 2 == 0;
    double on_s = 0, off_s = 0, on_cpu = 0, off_cpu_s = 0;
    if (on_first)
      on_s = timed(on, on_opt, on_cpu);
    off_s = timed(off, off_opt, off_cpu_s);
    if (!on_first)
      on_s = timed(on, on_opt, on_cpu);
    on_t.push_back(on_s / block);
    off_t.push_back(off_s / block);
    ratios.push_back(on_s / off_s);
    cpu_ratios.push_back(on_cpu / off_cpu_s);
    extra.push_back((on_cpu - off_cpu_s) / block);
    off_cpu.push_back(off_cpu_s / block);
  }
  return {median(on_t) * 1e3, median(off_t) * 1e3, median(ratios),
          median(cpu_ratios), median(extra) * 1e6, median(off_cpu) * 1e6};
}

// The in-place error explainer's engine against autograd's base engine on
// one model (detector on, as by default), paired blocks of clean Adam steps
// as above: a step that does not fail costs the explainer one virtual call.
torch::autograd::Engine *explaining_engine = nullptr;
torch::autograd::Engine &explaining() { return *explaining_engine; }

double compare_explainer(const ddpguard::ProcessGroupPtr &pg, int64_t hidden,
                         int64_t batch, int block, int pairs) {
  auto x = torch::randn({batch, hidden / 4});
  Mlp model(hidden);
  DDP ddp(model, pg);
  torch::optim::Adam opt(model->parameters(), torch::optim::AdamOptions(1e-4));
  run_steps(ddp, opt, x, 5);
  auto timed = [&](bool explained) {
    torch::autograd::set_default_engine_stub(
        explained ? &explaining : &torch::autograd::Engine::get_base_engine);
    const double cpu0 = thread_cpu_seconds();
    run_steps(ddp, opt, x, block);
    return thread_cpu_seconds() - cpu0;
  };
  std::vector<double> ratios;
  for (int b = 0; b < pairs; ++b) {
    const bool on_first = b % 2 == 0;
    double on = 0, off = 0;
    if (on_first)
      on = timed(true);
    off = timed(false);
    if (!on_first)
      on = timed(true);
    ratios.push_back(on / off);
  }
  torch::autograd::set_default_engine_stub(&explaining);
  return median(ratios);
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s STEPS HIDDEN BATCH DETECTOR(0|1|2)\n", argv[0]);
    return 2;
  }
  const int steps = std::atoi(argv[1]);
  const int64_t hidden = std::atoll(argv[2]), batch = std::atoll(argv[3]);
  const int detector = std::atoi(argv[4]);
  torch::set_num_threads(1);
  auto pg = ddpguard::init_process_group_from_env("gloo", std::chrono::seconds(60));
  explaining_engine = &torch::autograd::Engine::get_default_engine();
  torch::manual_seed(0);
  auto x = torch::randn({batch, hidden / 4});

  Mlp model(hidden);
  DDP ddp(model, pg);
  torch::optim::SGD opt(model->parameters(), 0.01);
  run_steps(ddp, opt, x, 5); // warm-up, bucket rebuild
  const double cpp = run_steps(ddp, opt, x, steps) / steps;
  if (pg->getRank() == 0)
    std::printf("cpp_step_ms=%.4f\n", cpp * 1e3);
  const auto warn = ddpguard::DDPOptions().hazard_detector(ddpguard::HazardAction::kWarn);
  if (detector == 2) {
    const DetectorFigures silent =
        compare_detector(pg, hidden, batch, std::max(1, steps / 10), 40,
                         ddpguard::DDPOptions(warn).silent_writes(true), warn);
    if (pg->getRank() == 0)
      std::printf("silent_on_ms=%.4f silent_off_ms=%.4f silent_ratio=%.4f "
                  "silent_cpu_ratio=%.4f\n",
                  silent.on_ms, silent.off_ms, silent.wall_ratio, silent.cpu_ratio);
    return 0;
  }
  if (!detector)
    return 0;

  const auto off = ddpguard::DDPOptions().hazard_detector(ddpguard::HazardAction::kSilent);
  const DetectorFigures mlp =
      compare_detector(pg, hidden, batch, std::max(1, steps / 10), 40, warn, off);
  // The detector's work per step depends on the number of output nodes,
  // parameters and buffers, not on their sizes: on the same module tree with
  // tiny tensors the step is short and the difference resolvable.
  const DetectorFigures tiny = compare_detector(pg, 4, 2, 20, 300, warn, off);
  const double explainer = compare_explainer(pg, hidden, batch, std::max(1, steps / 10), 40);
  if (pg->getRank() == 0)
    std::printf("detector_on_ms=%.4f detector_off_ms=%.4f detector_ratio=%.4f "
                "detector_cpu_ratio=%.4f detector_us=%.2f tiny_step_cpu_us=%.1f "
                "step_cpu_us=%.1f explainer_cpu_ratio=%.4f\n",
                mlp.on_ms, mlp.off_ms, mlp.wall_ratio, mlp.cpu_ratio,
                tiny.cpu_extra_us, tiny.off_cpu_us, mlp.off_cpu_us, explainer);
  return 0;
}
