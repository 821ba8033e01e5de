// Hash throughput against memcpy of the same bytes, one thread, same run:
//   ddpguard_hash_bench [ROUNDS]
// For each size (in L2, in L3, in memory) it keeps the best of ROUNDS timed
// passes of each and prints
//   size=<bytes> memcpy_gbps=<x> hash_gbps=<y> ratio=<y/x>
// and last `min_ratio=<r>` (goal >= 0.5).
#include <ddpguard/runtime/Verify.h>

#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

template <typename F> double best_seconds(int rounds, int reps, F &&f) {
  double best = 1e30;
  for (int r = 0; r < rounds; ++r) {
    const auto t0 = Clock::now();
    for (int i = 0; i < reps; ++i)
      f();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count() / reps);
  }
  return best;
}

} // namespace

int main(int argc, char **argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 7;
  at::set_num_threads(1);
  volatile uint64_t sink = 0;
  double min_ratio = 1e30;
  for (size_t bytes : {size_t(256) << 10, size_t(4) << 20, size_t(64) << 20}) {
    std::vector<unsigned char> src(bytes), dst(bytes);
    for (size_t i = 0; i < bytes; ++i)
      src[i] = static_cast<unsigned char>(i * 2654435761u >> 13);
    std::memcpy(dst.data(), src.data(), bytes); // fault the pages in
    const int reps = std::max<int>(1, static_cast<int>((size_t(256) << 20) / bytes));
    const double copy = best_seconds(rounds, reps, [&] {
      std::memcpy(dst.data(), src.data(), bytes);
      sink = sink + dst[bytes / 2];
    });
    const double hash = best_seconds(rounds, reps, [&] {
      sink = sink + ddpguard::hash_bytes(src.data(), bytes);
    });
    const double copy_gbps = bytes / copy / 1e9, hash_gbps = bytes / hash / 1e9;
    min_ratio = std::min(min_ratio, hash_gbps / copy_gbps);
    std::printf("size=%zu memcpy_gbps=%.2f hash_gbps=%.2f ratio=%.3f\n", bytes, copy_gbps,
                hash_gbps, hash_gbps / copy_gbps);
  }
  std::printf("min_ratio=%.3f\n", min_ratio);
  return sink == 42 ? 1 : 0;
}
