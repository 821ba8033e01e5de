// The CUDA hash kernel's launcher (TensorHash.cu), callable from C++ without
// the CUDA headers.
#pragma once

#include <cstdint>
#include <string>

namespace ddpguard {

// Hashes `jobs` tensors on `stream` (a cudaStream_t): `job_table` is device
// memory holding, per job, the data pointer and the byte count (two int64).
// Adds each job's 16 lane sums (hashcore::finish's input) into `lanes`, device
// memory of jobs x 16 uint64 that the caller zeroed. `max_stripes` is the
// largest job's number of 64-byte stripes. Returns "" or CUDA's error string.
std::string cuda_hash_launch(const void *job_table, int jobs, uint64_t max_stripes,
                             void *lanes, void *stream);

} // namespace ddpguard
