// A wrapper of the rule file pasted.yaml whose name is only ever built by
// token pasting: no file spells 'PastedWrapper'. Neither this header nor
// the mock torch it includes names ddpguard's DDP.
#pragma once
#include <torch/torch.h>

#define APP_WRAPPER(Stem) Stem##Wrapper

struct AppNetImpl : torch::nn::Module {
  AppNetImpl() : bn(register_module("bn", torch::nn::BatchNorm1d(4))) {}
  torch::Tensor forward(const torch::Tensor &x) { return bn(x); }
  torch::nn::BatchNorm1d bn;
};
TORCH_MODULE(AppNet);

namespace app {
struct APP_WRAPPER(Pasted) {
  AppNet module;
  bool broadcast_buffers = true;
  torch::Tensor forward(const torch::Tensor &x);
  torch::Tensor operator()(const torch::Tensor &x) { return forward(x); }
};
} // namespace app
