// The LibTorch version ddpguard's runtime is compiled against, and what
// differs between the versions it supports (2.11.0 to 2.15.0). Keyed on
// <torch/version.h>, so one source builds against each.
#pragma once

#include <torch/version.h>

#define DDPGUARD_TORCH_VERSION_CODE(major, minor, patch)                      \
  ((major) * 10000 + (minor) * 100 + (patch))
#define DDPGUARD_TORCH_VERSION                                                 \
  DDPGUARD_TORCH_VERSION_CODE(TORCH_VERSION_MAJOR, TORCH_VERSION_MINOR,        \
                              TORCH_VERSION_PATCH)
#define DDPGUARD_TORCH_AT_LEAST(major, minor, patch)                           \
  (DDPGUARD_TORCH_VERSION >= DDPGUARD_TORCH_VERSION_CODE(major, minor, patch))

#if !DDPGUARD_TORCH_AT_LEAST(2, 11, 0)
#error "ddpguard's runtime supports LibTorch 2.11.0 to 2.15.0"
#endif

// 2.12.1 (pytorch/pytorch#175851): Python DDP's per-forward buffer sync runs
// under torch.autograd._unsafe_preserve_version_counter, so a buffer saved by
// an earlier forward no longer fails its backward's version check.
#define DDPGUARD_BUFFER_SYNC_PRESERVES_VERSIONS DDPGUARD_TORCH_AT_LEAST(2, 12, 1)
// 2.13.0: forward_sync_buffers replaces broadcast_buffers (kept as a
// deprecated alias), and autograd's Node is held by c10::intrusive_ptr.
#define DDPGUARD_HAS_FORWARD_SYNC_BUFFERS DDPGUARD_TORCH_AT_LEAST(2, 13, 0)
#define DDPGUARD_INTRUSIVE_NODES DDPGUARD_TORCH_AT_LEAST(2, 13, 0)
// Reducer options: batched_grad_copy (2.12), lazy_bucket_allocation (2.15).
#define DDPGUARD_HAS_BATCHED_GRAD_COPY DDPGUARD_TORCH_AT_LEAST(2, 12, 0)
#define DDPGUARD_HAS_LAZY_BUCKET_ALLOCATION DDPGUARD_TORCH_AT_LEAST(2, 15, 0)
