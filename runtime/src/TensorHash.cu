// ddpguard's content hash as a CUDA kernel: the same lanes as the CPU path
// (HashCore.h), so a CUDA tensor and its CPU copy hash alike. One launch
// hashes many tensors: blockIdx.y selects the tensor, the threads of the x
// blocks stride over its 64-byte stripes, each keeps the 16 lane sums of its
// stripes, and a block adds its sums into the result with atomicAdd (the sums
// are mod 2^64, so their order does not matter).
#include "HashCore.h"
#include "TensorHashCuda.h"

#include <cuda_runtime.h>

#include <algorithm>

namespace ddpguard {
namespace {

using hashcore::kLanes;
using hashcore::kStripeBytes;

__constant__ uint64_t kSecretDevice[kLanes] = {DDPGUARD_HASH_SECRETS};

struct Job {
  const unsigned char *data;
  long long bytes;
};

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;

__global__ void __launch_bounds__(kThreads)
    hash_kernel(const Job *jobs, unsigned long long *lanes_out) {
  const Job job = jobs[blockIdx.y];
  const uint64_t bytes = static_cast<uint64_t>(job.bytes);
  const uint64_t stripes = (bytes + kStripeBytes - 1) / kStripeBytes;
  const bool aligned = (reinterpret_cast<uintptr_t>(job.data) & 15) == 0;
  uint64_t product[kLanes], sum[kLanes];
#pragma unroll
  for (int l = 0; l < kLanes; ++l)
    product[l] = sum[l] = 0;

  for (uint64_t s = static_cast<uint64_t>(blockIdx.x) * kThreads + threadIdx.x;
       s < stripes; s += static_cast<uint64_t>(gridDim.x) * kThreads) {
    uint64_t word[kLanes];
    const unsigned char *stripe = job.data + s * kStripeBytes;
    if (aligned && (s + 1) * kStripeBytes <= bytes) {
      const ulonglong2 *v = reinterpret_cast<const ulonglong2 *>(stripe);
#pragma unroll
      for (int k = 0; k < kLanes / 2; ++k) {
        const ulonglong2 pair = __ldg(v + k);
        word[2 * k] = pair.x;
        word[2 * k + 1] = pair.y;
      }
    } else { // the last, partial stripe, or a misaligned tensor
      const uint64_t have = min(static_cast<uint64_t>(kStripeBytes), bytes - s * kStripeBytes);
#pragma unroll
      for (int l = 0; l < kLanes; ++l)
        word[l] = 0;
      for (uint64_t b = 0; b < have; ++b)
        word[b / 8] |= static_cast<uint64_t>(stripe[b]) << (8 * (b % 8));
    }
    const uint64_t key = hashcore::stripe_key(s);
#pragma unroll
    for (int l = 0; l < kLanes; ++l)
      hashcore::mix_word(word[l], kSecretDevice[l] ^ key, product[l], sum[l]);
  }

  __shared__ uint64_t partial[kWarps][2 * kLanes];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
#pragma unroll
  for (int l = 0; l < 2 * kLanes; ++l) {
    uint64_t v = l < kLanes ? product[l] : sum[l - kLanes];
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2)
      v += __shfl_down_sync(0xffffffffu, v, offset);
    if (lane == 0)
      partial[warp][l] = v;
  }
  __syncthreads();
  if (threadIdx.x < 2 * kLanes) {
    uint64_t total = 0;
#pragma unroll
    for (int w = 0; w < kWarps; ++w)
      total += partial[w][threadIdx.x];
    if (total != 0)
      atomicAdd(lanes_out + 2 * kLanes * blockIdx.y + threadIdx.x,
                static_cast<unsigned long long>(total));
  }
}

} // namespace

std::string cuda_hash_launch(const void *job_table, int jobs, uint64_t max_stripes,
                             void *lanes, void *stream) {
  if (jobs <= 0)
    return "";
  const uint64_t blocks_needed = (max_stripes + kThreads - 1) / kThreads;
  const unsigned grid_x =
      static_cast<unsigned>(std::max<uint64_t>(1, std::min<uint64_t>(blocks_needed, 1024)));
  const auto *table = static_cast<const Job *>(job_table);
  auto *out = static_cast<unsigned long long *>(lanes);
  constexpr int kMaxGridY = 65535;
  for (int first = 0; first < jobs; first += kMaxGridY) {
    const int count = std::min(kMaxGridY, jobs - first);
    hash_kernel<<<dim3(grid_x, count), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
        table + first, out + static_cast<size_t>(2 * kLanes) * first);
  }
  const cudaError_t error = cudaGetLastError();
  return error == cudaSuccess ? std::string() : std::string(cudaGetErrorString(error));
}

} // namespace ddpguard
