// The GPU checks of scripts/gpu-check.sh: one scenario of the contrastive
// two-view step on CUDA tensors, on the ranks torchrun started, with NCCL or
// with Gloo over CUDA tensors (several ranks may share one GPU).
//
//   gpu_check --probe                    exit 0 if a CUDA device is usable,
//                                        77 (CTest's skip code) if not
//   gpu_check SCENARIO BACKEND [STEPS]   under torchrun
//   gpu_check hash                       no launcher: the verification
//                                        mode's CUDA hash kernel against
//                                        its CPU path
//
// SCENARIO: buggy (two forwards, one backward, broadcast on), broadcast_off,
// forward_group, once_per_backward. Each rank prints one line
//   RESULT <scenario> <backend> world=<N> rank=<R> <PASS|FAIL> <detail>
// buggy passes when autograd's in-place error happens on CUDA tensors and the
// detector named the BatchNorm buffers; the fixes pass when every step
// trains and the parameters are identical on all ranks after each step.
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <ddpguard/runtime/Verify.h>

#include <torch/cuda.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

struct EncoderImpl : torch::nn::Module {
  EncoderImpl()
      : fc1(register_module("fc1", torch::nn::Linear(64, 128))),
        bn1(register_module("bn1", torch::nn::BatchNorm1d(128))),
        fc2(register_module("fc2", torch::nn::Linear(128, 32))) {}
  torch::Tensor forward(torch::Tensor x) {
    return fc2(torch::relu(bn1(fc1(x))));
  }
  torch::nn::Linear fc1;
  torch::nn::BatchNorm1d bn1;
  torch::nn::Linear fc2;
};
TORCH_MODULE(Encoder);

torch::Tensor loss_of(const torch::Tensor &z1, const torch::Tensor &z2) {
  return (z1 - z2).pow(2).mean() + 0.1 * z1.mean();
}

// The largest difference between this rank's parameters and rank 0's
// (gathered in full: the model is small).
double max_parameter_difference(const ddpguard::ProcessGroupPtr &pg,
                                Encoder &encoder) {
  std::vector<torch::Tensor> flat;
  for (const auto &p : encoder->parameters())
    flat.push_back(p.detach().reshape({-1}));
  auto mine = torch::cat(flat);
  std::vector<torch::Tensor> gathered;
  for (int r = 0; r < pg->getSize(); ++r)
    gathered.push_back(torch::empty_like(mine));
  std::vector<std::vector<torch::Tensor>> out{gathered};
  std::vector<torch::Tensor> in{mine};
  pg->allgather(out, in)->wait();
  double worst = 0;
  for (const auto &other : out[0])
    worst = std::max(worst, (other - out[0][0]).abs().max().item<double>());
  return worst;
}

int run(const std::string &scenario, const std::string &backend, int steps) {
  auto pg = ddpguard::init_process_group_from_env(backend);
  const int rank = pg->getRank();
  const int local_rank = std::atoi(std::getenv("LOCAL_RANK") ? std::getenv("LOCAL_RANK") : "0");
  const torch::Device device(torch::kCUDA,
                             local_rank % static_cast<int>(torch::cuda::device_count()));
  torch::manual_seed(rank); // different initial weights: construction must sync them
  Encoder encoder;
  encoder->to(device);
  auto options = ddpguard::DDPOptions();
  if (scenario == "broadcast_off")
    options.broadcast_buffers(false);
  if (scenario == "once_per_backward")
    options.buffer_broadcast(ddpguard::BufferBroadcast::kOncePerBackward);
  ddpguard::DistributedDataParallel<Encoder> ddp(encoder, pg, options);
  torch::optim::SGD optimizer(encoder->parameters(), torch::optim::SGDOptions(0.05));
  auto result = [&](bool pass, const std::string &detail) {
    std::printf("RESULT %s %s world=%d rank=%d %s %s\n", scenario.c_str(),
                backend.c_str(), pg->getSize(), rank, pass ? "PASS" : "FAIL",
                detail.c_str());
    std::fflush(stdout);
    return pass ? 0 : 1;
  };

  double worst = 0;
  for (int step = 0; step < steps; ++step) {
    torch::manual_seed(1000 * step + rank);
    auto x1 = torch::randn({256, 64}, device), x2 = torch::randn({256, 64}, device);
    optimizer.zero_grad();
    try {
      torch::Tensor z1, z2;
      if (scenario == "forward_group") {
        std::tie(z1, z2) = ddp.forward_group(x1, x2);
      } else {
        z1 = ddp(x1);
        z2 = ddp(x2);
      }
      loss_of(z1, z2).backward();
    } catch (const std::exception &e) {
      const std::string what = e.what();
      const std::string report = ddpguard::latest_hazard_report();
      const bool expected = scenario == "buggy" &&
                            what.find("modified by an inplace operation") != std::string::npos &&
                            what.find("CUDA") != std::string::npos &&
                            report.find("bn1.running_mean") != std::string::npos;
      return result(expected, expected ? "autograd's in-place error on CUDA tensors; "
                                         "detector named bn1.running_mean, bn1.running_var"
                                       : "unexpected error: " + what.substr(0, 300));
    }
    optimizer.step();
    torch::cuda::synchronize();
    worst = std::max(worst, max_parameter_difference(pg, encoder));
  }
  if (scenario == "buggy")
    return result(false, "the buggy pattern trained: the bug did not reproduce");
  return result(worst == 0.0, "trained " + std::to_string(steps) +
                                  " steps; max parameter difference across ranks " +
                                  std::to_string(worst));
}

// The CUDA hash kernel gives the CPU path's value for the same bytes: sizes
// around the 64-byte stripe, large tensors, a non-contiguous and a
// misaligned one, several dtypes, all in one batched launch; and one flipped
// bit on the device changes the hash.
int check_hash() {
  auto result = [](bool pass, const std::string &detail) {
    std::printf("RESULT hash cuda world=1 rank=0 %s %s\n", pass ? "PASS" : "FAIL",
                detail.c_str());
    std::fflush(stdout);
    return pass ? 0 : 1;
  };
  if (!ddpguard::cuda_hash_available())
    return result(false, "this build has no CUDA hash kernel");
  if (!torch::cuda::is_available())
    return result(false, "no usable CUDA device");
  torch::manual_seed(3);
  std::vector<torch::Tensor> cpu;
  for (int64_t n : {0, 1, 15, 16, 17, 1000, 100003, 1 << 22, 1 << 26})
    cpu.push_back(torch::randn({n}));
  cpu.push_back(torch::randn({64, 65}).t());
  cpu.push_back(torch::randn({1001}).slice(0, 1));
  cpu.push_back(torch::randint(0, 1 << 30, {333}, torch::kLong));
  cpu.push_back(torch::randn({77}).to(torch::kHalf));
  std::vector<torch::Tensor> cuda;
  for (const auto &t : cpu)
    cuda.push_back(t.to(torch::kCUDA));
  const auto a = ddpguard::hash_tensors(cpu), b = ddpguard::hash_tensors(cuda);
  for (size_t i = 0; i < cpu.size(); ++i)
    if (a[i] != b[i])
      return result(false, "tensor " + std::to_string(i) + " hashes differently on the GPU");
  auto flipped = cuda[6].clone();
  flipped.view(torch::kInt)[12345].bitwise_xor_(1 << 7);
  if (ddpguard::hash_tensor(flipped) == b[6])
    return result(false, "a flipped bit did not change the CUDA hash");
  // Throughput of the kernel on 256 MiB (informative).
  auto big = torch::randn({64 << 20}, torch::kCUDA);
  ddpguard::hash_tensor(big);
  torch::cuda::synchronize();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 5; ++i)
    ddpguard::hash_tensor(big);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 5;
  char detail[160];
  std::snprintf(detail, sizeof detail,
                "%zu tensors: CUDA hashes equal the CPU path; flipped bit detected; "
                "256 MiB in %.3f ms (%.0f GB/s)",
                cpu.size(), s * 1e3, 256.0 * (1 << 20) / s / 1e9);
  return result(true, detail);
}

} // namespace

int main(int argc, char **argv) {
  if (argc == 2 && std::string(argv[1]) == "--probe") {
    if (torch::cuda::is_available())
      return 0;
    std::printf("no usable CUDA device: GPU checks skipped (scripts/gpu-check.sh "
                "runs them on a GPU machine)\n");
    return 77;
  }
  if (argc == 2 && std::string(argv[1]) == "hash") {
    try {
      return check_hash();
    } catch (const std::exception &e) {
      const std::string what = e.what();
      std::printf("RESULT hash cuda world=1 rank=0 FAIL %s\n",
                  what.substr(0, what.find('\n')).c_str());
      return 1;
    }
  }
  if (argc < 3) {
    std::fprintf(stderr, "usage: gpu_check --probe | gpu_check SCENARIO BACKEND [STEPS]\n");
    return 2;
  }
  try {
    return run(argv[1], argv[2], argc > 3 ? std::atoi(argv[3]) : 5);
  } catch (const std::exception &e) {
    std::printf("RESULT %s %s FAIL %s\n", argv[1], argv[2], e.what());
    return 1;
  }
}
