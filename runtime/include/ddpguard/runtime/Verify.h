// Verification mode of the ddpguard runtime (docs/verifier.md).
//
// With DDPGUARD_VERIFY=1 in the environment (ddpguard-verify sets it; it also
// works through `torchrun ... ./train` unchanged), every
// ddpguard::DistributedDataParallel checks at every step that the ranks
// agree: the gradients after each synchronised backward and the parameters
// after each optimizer step are identical bit for bit, the buffers are
// identical after each broadcast, and where buffers are not synchronised
// (broadcast_buffers(false)) their divergence from rank 0 is measured. A
// check hashes every tensor on its device (a CUDA kernel for CUDA tensors);
// the hashes go to the other ranks by one allgather per exchange, which
// carries the checks of several steps when steps are short next to it. A
// divergence throws ddpguard::VerificationError naming the rank, the step and
// the tensor.
//
// Environment:
//   DDPGUARD_VERIFY=1               switch verification on (0 or unset: off)
//   DDPGUARD_VERIFY_PROGRESS=1      one progress line per step on stderr
//   DDPGUARD_VERIFY_JSON=PATH       a JSON summary per rank; "%r" in PATH is
//                                   the rank, else ".rank<R>" goes before the
//                                   extension
//   DDPGUARD_VERIFY_SYNC=1          exchange every check at once (gradients
//                                   before backward() returns)
//   DDPGUARD_VERIFY_BATCH=N         N checks per exchange (default adaptive)
#pragma once

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace ddpguard {

// Whether DDPGUARD_VERIFY asks for verification (read on every call).
bool verify_enabled();

// Thrown by a check when the ranks disagree; every rank throws the same
// message, so no rank is left waiting in a collective.
struct VerificationError : std::runtime_error {
  VerificationError(const std::string &message, int rank, int64_t step,
                    std::string tensor)
      : std::runtime_error(message), rank(rank), step(step),
        tensor(std::move(tensor)) {}
  int rank;           // the first rank that differs from rank 0
  int64_t step;       // 0-based: the synchronised backward it follows
  std::string tensor; // module path, e.g. "fc1.weight"
};

// Names the DDP instances constructed from now on in progress lines and the
// JSON summary (default "ddp#<n>"). For programs that build several.
void set_verify_label(const std::string &label);

// The content hash the checks compare: 64 bits over the raw bytes, in 64-byte
// stripes of eight 64-bit lanes. Per lane it keeps the sum of the words and
// the sum of 32x32-bit products of the words mixed with a per-lane,
// per-stripe key; both sums are order-free, so the CPU path (vectorised,
// threaded by stripe ranges) and the CUDA kernel (atomic adds) agree bit for
// bit. The length, then each lane's sums, go through MurmurHash3's finaliser.
// Any single flipped bit changes a lane's word sum, hence the hash (up to a
// 2^-64 chance in the final mixing).
uint64_t hash_bytes(const void *data, size_t bytes, uint64_t seed = 0);

// The hash of a tensor: its dtype, shape and bytes (in C-contiguous order).
// CUDA tensors are hashed on their device (same value as on the CPU).
// An undefined tensor hashes to 0.
uint64_t hash_tensor(const at::Tensor &tensor);

// The hashes of several tensors; CUDA tensors are hashed by one kernel
// launch per device.
std::vector<uint64_t> hash_tensors(const std::vector<at::Tensor> &tensors);

// Whether this build has the CUDA hash kernel (a CUDA LibTorch and nvcc).
bool cuda_hash_available();

namespace detail {
// The 16 lane sums of hash_bytes before the final mixing (8 products, then 8
// word sums), as the CUDA kernel returns them; and the final mixing.
void hash_lanes(const void *data, size_t bytes, uint64_t lanes[16]);
uint64_t hash_finish(const uint64_t lanes[16], size_t bytes, uint64_t seed);
// The seed of a tensor's hash: its dtype and shape.
uint64_t tensor_seed(const at::Tensor &tensor);
} // namespace detail

} // namespace ddpguard
