// Modules shared by the checker tests.
#pragma once
#include <ddpguard/runtime/DistributedDataParallel.h>

struct NetImpl : torch::nn::Module {
  NetImpl()
      : fc(register_module("fc", torch::nn::Linear(4, 4))),
        bn(register_module("bn", torch::nn::BatchNorm1d(4))) {}
  torch::Tensor forward(const torch::Tensor &x) { return bn(fc(x)); }
  torch::nn::Linear fc;
  torch::nn::BatchNorm1d bn;
};
TORCH_MODULE(Net);

// Only Linear layers: no buffers.
struct PlainImpl : torch::nn::Module {
  PlainImpl() : fc(register_module("fc", torch::nn::Linear(4, 4))) {}
  torch::Tensor forward(const torch::Tensor &x) { return fc(x); }
  torch::nn::Linear fc;
};
TORCH_MODULE(Plain);

// A custom buffer, as in pytorch/pytorch#22095.
struct CountingImpl : torch::nn::Module {
  CountingImpl() : fc(register_module("fc", torch::nn::Linear(4, 4))) {
    register_buffer("seen", torch::zeros({1}));
  }
  torch::Tensor forward(const torch::Tensor &x) { return fc(x); }
  torch::nn::Linear fc;
};
TORCH_MODULE(Counting);

using PG = c10::intrusive_ptr<c10d::ProcessGroup>;
using DDP = ddpguard::DistributedDataParallel<Net>;
