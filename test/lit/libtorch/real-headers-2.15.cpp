// LibTorch 2.15's real headers (the torch 2.15.0 wheel in .venvs, C++20):
// the version comes from <torch/headeronly/version.h>, ddpguard's runtime
// preserves the buffers' version counters there, and the contrastive step is
// silent; judged by 2.11.0 (the option) it is reported and fixed with the
// spelling 2.11 knows, which 2.15's runtime header still accepts.
// REQUIRES: libtorch-2.15
// RUN: %check_ddpguard --check-suffix=SILENT %s %t.a -- %torch215_flags
// RUN: %check_ddpguard --option=TorchVersion=2.11.0 %s %t.b -- %torch215_flags
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

void contrastiveStep(Encoder encoder,
                     c10::intrusive_ptr<c10d::ProcessGroup> group,
                     torch::Tensor batch) {
  ddpguard::DistributedDataParallel<Encoder> model(encoder, group);
  // CHECK-FIXES: ddpguard::DistributedDataParallel<Encoder> model(encoder, group, ddpguard::DDPOptions().broadcast_buffers(false));
  auto z1 = model(batch + 0.1 * torch::randn_like(batch));
  auto z2 = model(batch + 0.1 * torch::randn_like(batch));
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'model' before the backward of the forward at line [[@LINE-2]]
  // CHECK-MESSAGES: :[[@LINE-2]]:13: note: judged by LibTorch 2.11.0, from the TorchVersion option{{$}}
  auto logits = torch::matmul(z1, z2.t());
  auto loss = torch::nn::functional::cross_entropy(
      logits, torch::arange(batch.size(0)));
  loss.backward();
}
