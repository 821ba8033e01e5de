// Training-step time of ddpguard::DistributedDataParallel on Gloo, one
// process per rank under ddpguard-launch. Prints, from rank 0:
//   cpp_step_ms=<mean ms per step>            (default options)
//   detector_on_ms=<median> detector_off_ms=<median>
// The detector figures alternate blocks of steps on two identical models
// (kWarn vs kSilent) so that drift affects both alike. torch_step_bench.py is
// the PyTorch side; run_benchmarks.sh runs both and prints the ratios.
#include <ddpguard/runtime/DistributedDataParallel.h>

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace {

struct MlpImpl : torch::nn::Module {
  MlpImpl()
      : fc1(register_module("fc1", torch::nn::Linear(256, 1024))),
        bn1(register_module("bn1", torch::nn::BatchNorm1d(1024))),
        fc2(register_module("fc2", torch::nn::Linear(1024, 1024))),
        bn2(register_module("bn2", torch::nn::BatchNorm1d(1024))),
        fc3(register_module("fc3", torch::nn::Linear(1024, 256))) {}
  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(bn1(fc1(x)));
    x = torch::relu(bn2(fc2(x)));
    return fc3(x);
  }
  torch::nn::Linear fc1;
  torch::nn::BatchNorm1d bn1;
  torch::nn::Linear fc2;
  torch::nn::BatchNorm1d bn2;
  torch::nn::Linear fc3;
};
TORCH_MODULE(Mlp);

using DDP = ddpguard::DistributedDataParallel<Mlp>;

void barrier(const ddpguard::ProcessGroupPtr &pg) {
  std::vector<at::Tensor> t{torch::zeros({1})};
  pg->allreduce(t)->wait();
}

// Seconds for `steps` training steps.
double run_steps(DDP &ddp, torch::optim::SGD &opt, const torch::Tensor &x,
                 int steps) {
  barrier(ddp.process_group());
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) {
    opt.zero_grad();
    ddp(x).pow(2).mean().backward();
    opt.step();
  }
  barrier(ddp.process_group());
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

} // namespace

int main(int argc, char **argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 50;
  torch::set_num_threads(1);
  auto pg = ddpguard::init_process_group_from_env("gloo", std::chrono::seconds(60));
  torch::manual_seed(0);
  auto x = torch::randn({64, 256});

  Mlp model;
  DDP ddp(model, pg);
  torch::optim::SGD opt(model->parameters(), 0.01);
  run_steps(ddp, opt, x, 5); // warm-up, bucket rebuild
  const double cpp = run_steps(ddp, opt, x, steps) / steps;

  Mlp on_model, off_model;
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
    std::printf("cpp_step_ms=%.4f\ndetector_on_ms=%.4f detector_off_ms=%.4f\n",
                cpp * 1e3, median(on_t) * 1e3, median(off_t) * 1e3);
  return 0;
}
