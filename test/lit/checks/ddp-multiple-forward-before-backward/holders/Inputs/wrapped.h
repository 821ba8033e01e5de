// A hand-rolled DDP written the LibTorch way: an Impl module and its
// TORCH_MODULE holder, called through the holder.
#pragma once
#include <nets.h>

namespace trainer {
struct WrappedDDPImpl : torch::nn::Module {
  WrappedDDPImpl(Net module, PG group, bool broadcast_buffers = true);
  torch::Tensor forward(const torch::Tensor &x);
  Net module;
};
TORCH_MODULE(WrappedDDP);
} // namespace trainer
