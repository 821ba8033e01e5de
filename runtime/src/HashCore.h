// The arithmetic of ddpguard's content hash, shared by the CPU path
// (TensorHash.cpp) and the CUDA kernel (TensorHash.cu), so that both give the
// same value for the same bytes. See Verify.h for the design.
//
// Bytes are read as little-endian 64-bit words, zero-padded to whole 64-byte
// stripes. Word l of stripe s goes into lane l:
//   v = word ^ kSecret[l] ^ stripe_key(s)
//   product[l] += low32(v) * high32(v)        (mod 2^64)
//   sum[l]     += word                        (mod 2^64)
// Both are sums, so any split of the stripes (threads, CUDA blocks) gives the
// same lanes. The final value mixes the length, the seed and the 16 lanes
// through MurmurHash3's 64-bit finaliser (a bijection).
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define DDPGUARD_HD __host__ __device__ __forceinline__
#else
#define DDPGUARD_HD inline
#endif

namespace ddpguard::hashcore {

constexpr int kLanes = 8;
constexpr int kStripeBytes = 64;

// splitmix64 from the seed "ddpguard" (TensorHash.cu copies them into
// constant memory).
#define DDPGUARD_HASH_SECRETS                                                  \
  0xff4b33eaad88b559ULL, 0x5a6f21b28130138bULL, 0xe16abd93e0f44e3dULL,        \
      0x6d6a592535c63a82ULL, 0x2f80293ddecccf33ULL, 0xacc66e133b046095ULL,    \
      0x8731f4b8cd1a5975ULL, 0xe26af59c66059039ULL
constexpr uint64_t kSecret[kLanes] = {DDPGUARD_HASH_SECRETS};
constexpr uint64_t kLengthSalt = 0xbb057a6240f76b0fULL;

// A different key per stripe makes the hash depend on where each word is,
// not only on which words there are.
DDPGUARD_HD uint64_t stripe_key(uint64_t stripe) {
  const uint64_t m = stripe * 0x9E3779B97F4A7C15ULL;
  return m ^ (m >> 29);
}

DDPGUARD_HD uint64_t fmix64(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ULL;
  k ^= k >> 33;
  return k;
}

DDPGUARD_HD void mix_word(uint64_t word, uint64_t key, uint64_t &product,
                          uint64_t &sum) {
  const uint64_t v = word ^ key;
  product += (v & 0xffffffffULL) * (v >> 32);
  sum += word;
}

// lanes[0..7]: products, lanes[8..15]: word sums.
DDPGUARD_HD uint64_t finish(const uint64_t lanes[2 * kLanes], uint64_t bytes,
                            uint64_t seed) {
  uint64_t h = fmix64(seed ^ fmix64(bytes + kLengthSalt));
  for (int l = 0; l < 2 * kLanes; ++l)
    h = fmix64(h ^ lanes[l]) + 0x9E3779B97F4A7C15ULL;
  h = fmix64(h);
  return h == 0 ? 1 : h; // 0 stands for "no tensor"
}

} // namespace ddpguard::hashcore
