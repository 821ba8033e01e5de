// The model and step loop that the step benchmarks share (bench/runtime's
// C++/Python and detector figures, bench/verify's verification cost), so that
// their figures are about the same work.
#pragma once

#include <ddpguard/runtime/DistributedDataParallel.h>

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <vector>

namespace step_bench {

// in -> hidden -> hidden -> in, with BatchNorm; in = hidden / 4.
struct MlpImpl : torch::nn::Module {
  explicit MlpImpl(int64_t hidden)
      : fc1(register_module("fc1", torch::nn::Linear(hidden / 4, hidden))),
        bn1(register_module("bn1", torch::nn::BatchNorm1d(hidden))),
        fc2(register_module("fc2", torch::nn::Linear(hidden, hidden))),
        bn2(register_module("bn2", torch::nn::BatchNorm1d(hidden))),
        fc3(register_module("fc3", torch::nn::Linear(hidden, hidden / 4))) {}
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

inline void barrier(const ddpguard::ProcessGroupPtr &pg) {
  std::vector<at::Tensor> t{torch::zeros({1})};
  pg->allreduce(t)->wait();
}

// Seconds for `steps` training steps, between barriers.
inline double run_steps(DDP &ddp, torch::optim::Optimizer &opt,
                        const torch::Tensor &x, int steps) {
  barrier(ddp.process_group());
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) {
    opt.zero_grad();
    ddp(x).pow(2).mean().backward();
    opt.step();
  }
  barrier(ddp.process_group());
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

} // namespace step_bench
