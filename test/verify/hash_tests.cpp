// The verification mode's content hash: the CPU path against a plain
// reference implementation of the same definition (Verify.h, HashCore.h),
// equal tensors hash equal, one flipped bit changes the hash, and what a
// tensor's hash covers (dtype, shape, contiguous order). The CUDA kernel is
// compared with the CPU path where a GPU is usable (skipped otherwise; the
// GPU check program covers it too).
#include <ddpguard/runtime/Verify.h>

#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <set>
#include <vector>

namespace {

// The definition, written for clarity: bytes as little-endian 64-bit words,
// zero-padded to 64-byte stripes; word l of stripe s feeds lane l.
uint64_t ref_fmix(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ULL;
  k ^= k >> 33;
  return k;
}

const uint64_t kRefSecret[8] = {0xff4b33eaad88b559ULL, 0x5a6f21b28130138bULL,
                                0xe16abd93e0f44e3dULL, 0x6d6a592535c63a82ULL,
                                0x2f80293ddecccf33ULL, 0xacc66e133b046095ULL,
                                0x8731f4b8cd1a5975ULL, 0xe26af59c66059039ULL};

void ref_lanes(const unsigned char *data, size_t bytes, uint64_t lanes[16]) {
  for (int i = 0; i < 16; ++i)
    lanes[i] = 0;
  const size_t stripes = (bytes + 63) / 64;
  for (size_t s = 0; s < stripes; ++s) {
    const uint64_t m = static_cast<uint64_t>(s) * 0x9E3779B97F4A7C15ULL;
    const uint64_t key = m ^ (m >> 29);
    for (int l = 0; l < 8; ++l) {
      uint64_t word = 0;
      for (int b = 0; b < 8; ++b) {
        const size_t at = s * 64 + 8 * l + b;
        if (at < bytes)
          word |= static_cast<uint64_t>(data[at]) << (8 * b);
      }
      const uint64_t v = word ^ kRefSecret[l] ^ key;
      lanes[l] += (v & 0xffffffffULL) * (v >> 32);
      lanes[8 + l] += word;
    }
  }
}

uint64_t ref_hash(const unsigned char *data, size_t bytes, uint64_t seed) {
  uint64_t lanes[16];
  ref_lanes(data, bytes, lanes);
  uint64_t h = ref_fmix(seed ^ ref_fmix(bytes + 0xbb057a6240f76b0fULL));
  for (int l = 0; l < 16; ++l)
    h = ref_fmix(h ^ lanes[l]) + 0x9E3779B97F4A7C15ULL;
  h = ref_fmix(h);
  return h == 0 ? 1 : h;
}

std::vector<unsigned char> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<unsigned char> v(n);
  for (auto &b : v)
    b = static_cast<unsigned char>(gen());
  return v;
}

TEST(Hash, MatchesReferenceOnEverySmallLengthAndAlignment) {
  const auto data = random_bytes(400, 1);
  for (size_t offset = 0; offset < 8; ++offset)
    for (size_t n = 0; n + offset <= 330; ++n)
      ASSERT_EQ(ddpguard::hash_bytes(data.data() + offset, n, 7),
                ref_hash(data.data() + offset, n, 7))
          << "length " << n << ", offset " << offset;
}

TEST(Hash, MatchesReferenceOnLargeBuffersThreadedOrNot) {
  for (size_t n : {size_t(1) << 20, (size_t(3) << 20) + 13}) {
    const auto data = random_bytes(n, static_cast<uint32_t>(n));
    const uint64_t expected = ref_hash(data.data(), n, 0);
    for (int threads : {1, 2, 4}) {
      at::set_num_threads(threads);
      EXPECT_EQ(ddpguard::hash_bytes(data.data(), n), expected) << n << " bytes, " << threads
                                                                << " threads";
    }
  }
  at::set_num_threads(1);
}

TEST(Hash, LanesMatchReference) {
  const auto data = random_bytes(1000, 3);
  uint64_t a[16], b[16];
  ddpguard::detail::hash_lanes(data.data(), data.size(), a);
  ref_lanes(data.data(), data.size(), b);
  for (int i = 0; i < 16; ++i)
    EXPECT_EQ(a[i], b[i]) << "lane " << i;
}

TEST(Hash, EqualTensorsHashEqual) {
  torch::manual_seed(0);
  auto a = torch::randn({17, 33});
  auto b = a.clone();
  EXPECT_EQ(ddpguard::hash_tensor(a), ddpguard::hash_tensor(b));
  // Separately computed, same values.
  auto c = torch::arange(0, 1000, torch::kFloat) * 0.5;
  auto d = torch::arange(0, 500, 0.5, torch::kFloat);
  ASSERT_TRUE(torch::equal(c, d));
  EXPECT_EQ(ddpguard::hash_tensor(c), ddpguard::hash_tensor(d));
  // A view hashes its elements in C-contiguous order.
  auto t = a.t();
  EXPECT_FALSE(t.is_contiguous());
  EXPECT_EQ(ddpguard::hash_tensor(t), ddpguard::hash_tensor(t.contiguous()));
  EXPECT_EQ(ddpguard::hash_tensor(at::Tensor()), 0u);
  EXPECT_NE(ddpguard::hash_tensor(torch::zeros({0})), 0u);
}

TEST(Hash, OneFlippedBitChangesIt) {
  torch::manual_seed(1);
  for (int64_t numel : {1, 7, 16, 100, 5000}) {
    auto base = torch::randn({numel});
    const uint64_t h0 = ddpguard::hash_tensor(base);
    const int64_t bytes = numel * 4;
    std::set<uint64_t> seen{h0};
    // Every bit of the first 80 bytes and of the last 16, and 200 random bits.
    std::vector<int64_t> bits;
    for (int64_t i = 0; i < std::min<int64_t>(bytes, 80) * 8; ++i)
      bits.push_back(i);
    for (int64_t i = std::max<int64_t>(0, bytes - 16) * 8; i < bytes * 8; ++i)
      bits.push_back(i);
    std::mt19937 gen(static_cast<uint32_t>(numel));
    for (int i = 0; i < 200; ++i)
      bits.push_back(static_cast<int64_t>(gen() % (bytes * 8)));
    for (int64_t bit : bits) {
      auto flipped = base.clone();
      auto *p = static_cast<unsigned char *>(flipped.data_ptr());
      p[bit / 8] ^= static_cast<unsigned char>(1u << (bit % 8));
      const uint64_t h = ddpguard::hash_tensor(flipped);
      ASSERT_NE(h, h0) << "bit " << bit << " of " << numel << " floats";
      seen.insert(h);
    }
  }
}

TEST(Hash, CoversDtypeShapeAndOrder) {
  auto a = torch::arange(24, torch::kInt);
  EXPECT_NE(ddpguard::hash_tensor(a), ddpguard::hash_tensor(a.view({4, 6})));
  EXPECT_NE(ddpguard::hash_tensor(a.view({4, 6})), ddpguard::hash_tensor(a.view({6, 4})));
  EXPECT_NE(ddpguard::hash_tensor(a), ddpguard::hash_tensor(a.view(torch::kFloat)));
  // Two 64-byte stripes swapped: the same words, other places.
  auto b = torch::arange(32, torch::kLong); // 256 bytes, 4 stripes
  auto swapped = torch::cat({b.slice(0, 8, 16), b.slice(0, 0, 8), b.slice(0, 16, 32)});
  EXPECT_NE(ddpguard::hash_tensor(b), ddpguard::hash_tensor(swapped));
  // Trailing zero bytes are not padding: the length is part of the hash.
  const unsigned char zeros[16] = {0};
  EXPECT_NE(ddpguard::hash_bytes(zeros, 15), ddpguard::hash_bytes(zeros, 16));
  // -0.0 and 0.0 compare equal but are different bits.
  EXPECT_NE(ddpguard::hash_tensor(torch::tensor({0.0f})),
            ddpguard::hash_tensor(torch::tensor({-0.0f})));
}

TEST(Hash, ManyTensorsAtOnce) {
  std::vector<at::Tensor> ts{torch::randn({3}), at::Tensor(), torch::ones({2, 2}, torch::kDouble)};
  const auto hashes = ddpguard::hash_tensors(ts);
  ASSERT_EQ(hashes.size(), 3u);
  EXPECT_EQ(hashes[0], ddpguard::hash_tensor(ts[0]));
  EXPECT_EQ(hashes[1], 0u);
  EXPECT_EQ(hashes[2], ddpguard::hash_tensor(ts[2]));
}

TEST(Hash, CudaKernelMatchesCpu) {
  if (!ddpguard::cuda_hash_available() || !torch::cuda::is_available())
    GTEST_SKIP() << "no CUDA device (or no CUDA hash kernel in this build)";
  torch::manual_seed(2);
  std::vector<at::Tensor> cpu;
  for (int64_t n : {0, 1, 15, 16, 17, 1000, 100003, 1 << 22})
    cpu.push_back(torch::randn({n}));
  cpu.push_back(torch::randn({64, 65}).t()); // non-contiguous
  cpu.push_back(torch::randn({1001}).slice(0, 1)); // misaligned data pointer
  std::vector<at::Tensor> cuda;
  for (const auto &t : cpu)
    cuda.push_back(t.to(torch::kCUDA));
  const auto a = ddpguard::hash_tensors(cpu), b = ddpguard::hash_tensors(cuda);
  for (size_t i = 0; i < cpu.size(); ++i)
    EXPECT_EQ(a[i], b[i]) << "tensor " << i << " " << cpu[i].sizes();
}

} // namespace
