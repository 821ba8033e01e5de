// The contrastive two-view and GAN shapes against the real LibTorch headers
// (LibTorch 2.11 from the torch wheel) and ddpguard's real runtime header;
// the version is read from them (real-headers-2.15.cpp: 2.15's).
// REQUIRES: libtorch
// RUN: %check_ddpguard %s %t -- %torch_flags
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
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'model' before the backward of the forward at line [[@LINE-2]]: DDP broadcasts buffers before every forward and overwrites the buffers that forward saved for backward [ddp-multiple-forward-before-backward]
  // CHECK-MESSAGES: :[[@LINE-3]]:13: note: earlier forward on 'model' is here
  auto logits = torch::matmul(z1, z2.t());
  auto loss = torch::nn::functional::cross_entropy(
      logits, torch::arange(batch.size(0)));
  loss.backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:8: note: the backward that fails is here
  // CHECK-MESSAGES: :[[@LINE-8]]:13: note: judged by LibTorch 2.11.{{[0-9]+}}, from <torch/headeronly/version.h>{{$}}
}

struct DiscriminatorImpl : torch::nn::Module {
  DiscriminatorImpl()
      : conv(register_module("conv", torch::nn::Conv2d(3, 8, 3))),
        bn(register_module("bn", torch::nn::BatchNorm2d(8))),
        head(register_module("head", torch::nn::Linear(8, 1))) {}
  torch::Tensor forward(torch::Tensor x) {
    auto h = torch::leaky_relu(bn(conv(x)), 0.2);
    return head(h.mean({2, 3}));
  }
  torch::nn::Conv2d conv;
  torch::nn::BatchNorm2d bn;
  torch::nn::Linear head;
};
TORCH_MODULE(Discriminator);

void discriminatorStep(Discriminator netD,
                       c10::intrusive_ptr<c10d::ProcessGroup> group,
                       torch::Tensor real, torch::Tensor fake,
                       torch::optim::Adam &optimizer) {
  auto D = std::make_shared<ddpguard::DistributedDataParallel<Discriminator>>(
      netD, group, ddpguard::DDPOptions().find_unused_parameters(false));
  // CHECK-FIXES: netD, group, ddpguard::DDPOptions().find_unused_parameters(false).broadcast_buffers(false));
  optimizer.zero_grad();
  auto fakeOut = (*D)(fake.detach());
  auto realOut = D->forward(real);
  // CHECK-MESSAGES: :[[@LINE-1]]:18: warning: forward call on DDP-wrapped 'D' before the backward of the forward at line [[@LINE-2]]
  auto loss =
      torch::binary_cross_entropy_with_logits(fakeOut, torch::zeros_like(fakeOut)) +
      torch::binary_cross_entropy_with_logits(realOut, torch::ones_like(realOut));
  loss.backward();
  optimizer.step();
}
