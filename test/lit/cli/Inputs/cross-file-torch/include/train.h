#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

struct EncoderImpl : torch::nn::Module {
  EncoderImpl()
      : fc(register_module("fc", torch::nn::Linear(16, 8))),
        bn(register_module("bn", torch::nn::BatchNorm1d(8))) {}
  torch::Tensor forward(torch::Tensor x) { return bn(fc(x)); }
  torch::nn::Linear fc;
  torch::nn::BatchNorm1d bn;
};
TORCH_MODULE(Encoder);

using Group = c10::intrusive_ptr<c10d::ProcessGroup>;
using DDP = ddpguard::DistributedDataParallel<Encoder>;

void twoViews(DDP &model, torch::Tensor v1, torch::Tensor v2);
