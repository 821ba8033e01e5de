// ddpguard's content hash on the CPU (vectorised, threaded over stripe
// ranges) and the dispatch of CUDA tensors to the kernel in TensorHash.cu.
#include <ddpguard/runtime/Verify.h>

#include "HashCore.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/util/Exception.h>

#include <cstring>
#if defined(__x86_64__)
#include <immintrin.h>
#endif
#include <map>
#include <mutex>

#if defined(DDPGUARD_CUDA_HASH)
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include "TensorHashCuda.h"
#endif

namespace ddpguard {
namespace {

using hashcore::kLanes;
using hashcore::kSecret;
using hashcore::kStripeBytes;

// Stripes [begin, end) of `data`, all complete, added into `lanes`: the
// portable version (compilers vectorise the lane loop where they can).
[[maybe_unused]] void add_stripes_scalar(const unsigned char *data, uint64_t begin, uint64_t end,
                        uint64_t lanes[2 * kLanes]) {
  uint64_t product[kLanes] = {0, 0, 0, 0, 0, 0, 0, 0};
  uint64_t sum[kLanes] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (uint64_t s = begin; s < end; ++s) {
    const uint64_t key = hashcore::stripe_key(s);
    const unsigned char *stripe = data + s * kStripeBytes;
    for (int l = 0; l < kLanes; ++l) {
      uint64_t word;
      std::memcpy(&word, stripe + 8 * l, 8);
      const uint64_t v = word ^ (kSecret[l] ^ key);
      product[l] += (v & 0xffffffffULL) * (v >> 32);
      sum[l] += word;
    }
  }
  for (int l = 0; l < kLanes; ++l) {
    lanes[l] += product[l];
    lanes[kLanes + l] += sum[l];
  }
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define DDPGUARD_HASH_X86 1

// x86-64: a stripe is two AVX2 registers (or four SSE2 ones) of four (two)
// lanes; the 32x32->64 multiply is one vpmuludq per register. The stripe key
// s * 0x9E37... is kept as a running sum.
__attribute__((target("avx2"))) void
add_stripes_avx2(const unsigned char *data, uint64_t begin, uint64_t end,
                 uint64_t lanes[2 * kLanes]) {
  const __m256i secret0 = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(kSecret));
  const __m256i secret1 = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(kSecret + 4));
  __m256i p0 = _mm256_setzero_si256(), p1 = p0, s0 = p0, s1 = p0;
  uint64_t m = begin * 0x9E3779B97F4A7C15ULL;
  for (uint64_t s = begin; s < end; ++s, m += 0x9E3779B97F4A7C15ULL) {
    const __m256i key = _mm256_set1_epi64x(static_cast<long long>(m ^ (m >> 29)));
    const auto *stripe = reinterpret_cast<const __m256i *>(data + s * kStripeBytes);
    const __m256i d0 = _mm256_loadu_si256(stripe), d1 = _mm256_loadu_si256(stripe + 1);
    const __m256i v0 = _mm256_xor_si256(d0, _mm256_xor_si256(secret0, key));
    const __m256i v1 = _mm256_xor_si256(d1, _mm256_xor_si256(secret1, key));
    p0 = _mm256_add_epi64(p0, _mm256_mul_epu32(v0, _mm256_srli_epi64(v0, 32)));
    p1 = _mm256_add_epi64(p1, _mm256_mul_epu32(v1, _mm256_srli_epi64(v1, 32)));
    s0 = _mm256_add_epi64(s0, d0);
    s1 = _mm256_add_epi64(s1, d1);
  }
  alignas(32) uint64_t out[16];
  _mm256_store_si256(reinterpret_cast<__m256i *>(out), p0);
  _mm256_store_si256(reinterpret_cast<__m256i *>(out + 4), p1);
  _mm256_store_si256(reinterpret_cast<__m256i *>(out + 8), s0);
  _mm256_store_si256(reinterpret_cast<__m256i *>(out + 12), s1);
  for (int l = 0; l < 16; ++l)
    lanes[l] += out[l];
}

void add_stripes_sse2(const unsigned char *data, uint64_t begin, uint64_t end,
                      uint64_t lanes[2 * kLanes]) {
  __m128i secret[4], p[4], sm[4];
  for (int k = 0; k < 4; ++k) {
    secret[k] = _mm_loadu_si128(reinterpret_cast<const __m128i *>(kSecret + 2 * k));
    p[k] = sm[k] = _mm_setzero_si128();
  }
  uint64_t m = begin * 0x9E3779B97F4A7C15ULL;
  for (uint64_t s = begin; s < end; ++s, m += 0x9E3779B97F4A7C15ULL) {
    const __m128i key = _mm_set1_epi64x(static_cast<long long>(m ^ (m >> 29)));
    const auto *stripe = reinterpret_cast<const __m128i *>(data + s * kStripeBytes);
    for (int k = 0; k < 4; ++k) {
      const __m128i d = _mm_loadu_si128(stripe + k);
      const __m128i v = _mm_xor_si128(d, _mm_xor_si128(secret[k], key));
      p[k] = _mm_add_epi64(p[k], _mm_mul_epu32(v, _mm_srli_epi64(v, 32)));
      sm[k] = _mm_add_epi64(sm[k], d);
    }
  }
  alignas(16) uint64_t out[16];
  for (int k = 0; k < 4; ++k) {
    _mm_store_si128(reinterpret_cast<__m128i *>(out + 2 * k), p[k]);
    _mm_store_si128(reinterpret_cast<__m128i *>(out + 8 + 2 * k), sm[k]);
  }
  for (int l = 0; l < 16; ++l)
    lanes[l] += out[l];
}
#endif

void add_stripes(const unsigned char *data, uint64_t begin, uint64_t end,
                 uint64_t lanes[2 * kLanes]) {
#if defined(DDPGUARD_HASH_X86)
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2)
    add_stripes_avx2(data, begin, end, lanes);
  else
    add_stripes_sse2(data, begin, end, lanes);
#else
  add_stripes_scalar(data, begin, end, lanes);
#endif
}

// Below this many stripes (1 MiB) one thread hashes the whole range.
constexpr int64_t kGrainStripes = 16384;

} // namespace

namespace detail {

void hash_lanes(const void *data, size_t bytes, uint64_t lanes[16]) {
  static_assert(2 * kLanes == 16, "16 lanes");
  for (int l = 0; l < 16; ++l)
    lanes[l] = 0;
  const auto *p = static_cast<const unsigned char *>(data);
  const uint64_t full = bytes / kStripeBytes;
  if (full >= static_cast<uint64_t>(2 * kGrainStripes) &&
      at::get_num_threads() > 1 && !at::in_parallel_region()) {
    std::mutex mutex;
    at::parallel_for(0, static_cast<int64_t>(full), kGrainStripes,
                     [&](int64_t begin, int64_t end) {
                       uint64_t part[16] = {0};
                       add_stripes(p, begin, end, part);
                       std::lock_guard<std::mutex> lock(mutex);
                       for (int l = 0; l < 16; ++l)
                         lanes[l] += part[l];
                     });
  } else {
    add_stripes(p, 0, full, lanes);
  }
  if (const size_t rest = bytes - full * kStripeBytes) {
    unsigned char last[kStripeBytes] = {0};
    std::memcpy(last, p + full * kStripeBytes, rest);
    const uint64_t key = hashcore::stripe_key(full);
    for (int l = 0; l < kLanes; ++l) {
      uint64_t word;
      std::memcpy(&word, last + 8 * l, 8);
      hashcore::mix_word(word, kSecret[l] ^ key, lanes[l], lanes[kLanes + l]);
    }
  }
}

uint64_t hash_finish(const uint64_t lanes[16], size_t bytes, uint64_t seed) {
  return hashcore::finish(lanes, bytes, seed);
}

uint64_t tensor_seed(const at::Tensor &tensor) {
  uint64_t h = hashcore::fmix64(static_cast<uint64_t>(tensor.scalar_type()) + 1);
  h = hashcore::fmix64(h ^ static_cast<uint64_t>(tensor.dim()));
  for (auto size : tensor.sizes())
    h = hashcore::fmix64(h ^ static_cast<uint64_t>(size)) + 0x9E3779B97F4A7C15ULL;
  return h;
}

} // namespace detail

uint64_t hash_bytes(const void *data, size_t bytes, uint64_t seed) {
  uint64_t lanes[16];
  detail::hash_lanes(data, bytes, lanes);
  return detail::hash_finish(lanes, bytes, seed);
}

bool cuda_hash_available() {
#if defined(DDPGUARD_CUDA_HASH)
  return true;
#else
  return false;
#endif
}

namespace {

uint64_t hash_cpu(const at::Tensor &tensor) {
  const at::Tensor t = tensor.is_contiguous() ? tensor : tensor.contiguous();
  const size_t bytes = static_cast<size_t>(t.numel()) * t.element_size();
  return hash_bytes(bytes ? t.const_data_ptr() : nullptr, bytes,
                    detail::tensor_seed(tensor));
}

#if defined(DDPGUARD_CUDA_HASH)
// All tensors of one CUDA device in one kernel launch on its current stream.
void hash_cuda(const std::vector<at::Tensor> &tensors,
               const std::vector<size_t> &indices, std::vector<uint64_t> &out) {
  const at::Device device = tensors[indices.front()].device();
  c10::cuda::CUDAGuard guard(device);
  std::vector<at::Tensor> alive; // contiguous copies live until the copy back
  std::vector<int64_t> jobs;
  std::vector<size_t> bytes;
  uint64_t max_stripes = 0;
  for (size_t i : indices) {
    const at::Tensor &t = tensors[i];
    alive.push_back(t.is_contiguous() ? t : t.contiguous());
    const size_t n = static_cast<size_t>(t.numel()) * t.element_size();
    bytes.push_back(n);
    jobs.push_back(reinterpret_cast<int64_t>(n ? alive.back().const_data_ptr() : nullptr));
    jobs.push_back(static_cast<int64_t>(n));
    max_stripes = std::max<uint64_t>(max_stripes, (n + kStripeBytes - 1) / kStripeBytes);
  }
  const auto long_options = at::TensorOptions().dtype(at::kLong);
  const at::Tensor job_table = at::tensor(jobs, long_options).to(device);
  at::Tensor lanes = at::zeros({static_cast<int64_t>(indices.size()), 16},
                               long_options.device(device));
  const std::string error = cuda_hash_launch(
      job_table.const_data_ptr(), static_cast<int>(indices.size()), max_stripes,
      lanes.mutable_data_ptr(), c10::cuda::getCurrentCUDAStream(device.index()).stream());
  TORCH_CHECK(error.empty(), "ddpguard: the CUDA hash kernel failed: ", error);
  const at::Tensor host = lanes.cpu(); // waits for the kernel
  const auto *values = reinterpret_cast<const uint64_t *>(host.const_data_ptr());
  for (size_t k = 0; k < indices.size(); ++k)
    out[indices[k]] = detail::hash_finish(values + 16 * k, bytes[k],
                                          detail::tensor_seed(tensors[indices[k]]));
}
#endif

} // namespace

std::vector<uint64_t> hash_tensors(const std::vector<at::Tensor> &tensors) {
  std::vector<uint64_t> out(tensors.size(), 0);
  std::map<int, std::vector<size_t>> cuda_by_device;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const at::Tensor &t = tensors[i];
    if (!t.defined())
      continue;
    TORCH_CHECK(t.layout() == at::kStrided,
                "ddpguard: only dense (strided) tensors can be hashed");
#if defined(DDPGUARD_CUDA_HASH)
    if (t.is_cuda()) {
      cuda_by_device[t.get_device()].push_back(i);
      continue;
    }
#endif
    out[i] = t.is_cpu() ? hash_cpu(t) : hash_cpu(t.cpu());
  }
#if defined(DDPGUARD_CUDA_HASH)
  for (const auto &[device, indices] : cuda_by_device)
    hash_cuda(tensors, indices, out);
#endif
  return out;
}

uint64_t hash_tensor(const at::Tensor &tensor) {
  return hash_tensors({tensor}).front();
}

} // namespace ddpguard
