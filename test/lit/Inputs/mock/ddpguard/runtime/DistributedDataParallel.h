// A stand-in for ddpguard's runtime header with the API of docs/runtime.md.
#pragma once
#include <torch/torch.h>

namespace c10d {
class ProcessGroup {
public:
  int getRank() const;
  int getSize() const;
};
} // namespace c10d

namespace ddpguard {
enum class BufferBroadcast { kEveryForward, kOncePerBackward };

class DDPOptions {
public:
  DDPOptions &broadcast_buffers(bool Value) { Broadcast = Value; return *this; }
#if defined(TORCH_VERSION_MINOR) && TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 13
  // 2.13 on, as PyTorch's DDP: broadcast_buffers stays as its alias.
  DDPOptions &forward_sync_buffers(bool Value) { Broadcast = Value; return *this; }
#endif
  DDPOptions &find_unused_parameters(bool Value) { FindUnused = Value; return *this; }
  DDPOptions &bucket_cap_mb(double Value) { BucketCap = Value; return *this; }
  DDPOptions &buffer_broadcast(BufferBroadcast Value) { Policy = Value; return *this; }
private:
  BufferBroadcast Policy = BufferBroadcast::kEveryForward;
  bool Broadcast = true, FindUnused = false;
  double BucketCap = 25;
};

template <typename Holder> class DistributedDataParallel {
public:
  DistributedDataParallel(Holder Module,
                          c10::intrusive_ptr<c10d::ProcessGroup> Group,
                          DDPOptions Options = DDPOptions());
  template <typename... Args> torch::Tensor forward(Args &&...A);
  template <typename... Args> torch::Tensor operator()(Args &&...A) {
    return forward(A...);
  }
  template <typename... Inputs> auto forward_group(Inputs &&...I) {
    return std::make_tuple((static_cast<void>(I), torch::Tensor())...);
  }
  Holder &module();
};

c10::intrusive_ptr<c10d::ProcessGroup>
init_process_group_from_env(const std::string &Backend);
} // namespace ddpguard
