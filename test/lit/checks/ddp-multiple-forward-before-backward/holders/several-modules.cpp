// A trainer holding two wrapped modules, each described by its own rule in
// one rule file: both are reported and fixed where they are constructed.
// RUN: %check_ddpguard --rules=%S/Inputs/gan-rules.yaml %s %t -- %mock_flags
#include <nets.h>

namespace gan {
struct GeneratorDDPImpl : torch::nn::Module {
  GeneratorDDPImpl(Net module, PG group, bool broadcast_buffers = true);
  torch::Tensor forward(const torch::Tensor &x);
  Net module;
};
TORCH_MODULE(GeneratorDDP);
struct DiscriminatorDDPImpl : torch::nn::Module {
  DiscriminatorDDPImpl(Net module, PG group);
  torch::Tensor forward(const torch::Tensor &x);
  Net module;
  bool broadcast_buffers = true;
};
TORCH_MODULE(DiscriminatorDDP);
} // namespace gan

void train(Net g, Net d, PG pg, torch::Tensor noise, torch::Tensor real) {
  gan::GeneratorDDP gen(g, pg);
  // CHECK-FIXES: {{^}}  gan::GeneratorDDP gen(g, pg, false);{{$}}
  gan::DiscriminatorDDP disc(d, pg);
  // CHECK-FIXES: {{^}}  gan::DiscriminatorDDP disc(d, pg);{{$}}
  // CHECK-FIXES-NEXT: {{^}}  disc->broadcast_buffers = false;{{$}}
  auto fake = gen(noise);
  auto fake2 = gen->forward(noise);
  // CHECK-MESSAGES: :[[@LINE-1]]:16: warning: forward call on DDP-wrapped 'gen' before the backward of the forward at line [[@LINE-2]]:
  auto on_real = disc(real);
  auto on_fake = disc(fake + fake2);
  // CHECK-MESSAGES: :[[@LINE-1]]:18: warning: forward call on DDP-wrapped 'disc' before the backward of the forward at line [[@LINE-2]]:
  // CHECK-MESSAGES: :[[@LINE-9]]:25: note: 'broadcast_buffers' is true by default in this construction of 'disc'
  (on_real - on_fake).sum().backward();
}
