// A user-written DDP with an options object like PyTorch's: from LibTorch
// 2.13 its setter is forward_sync_buffers, broadcast_buffers an alias. Its
// broadcast is a plain copy_, which bumps the buffers' version counters.
#pragma once
#include <nets.h>

namespace trainer {
class SyncOptions {
public:
  SyncOptions &broadcast_buffers(bool Value) { Sync = Value; return *this; }
#if TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 13
  SyncOptions &forward_sync_buffers(bool Value) { Sync = Value; return *this; }
#endif
private:
  bool Sync = true;
};

template <typename Holder> class OptionsDDP {
public:
  OptionsDDP(Holder Module, PG Group, SyncOptions Options = SyncOptions());
  torch::Tensor forward(const torch::Tensor &X);
};
} // namespace trainer
