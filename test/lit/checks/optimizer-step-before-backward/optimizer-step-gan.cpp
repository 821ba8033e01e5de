// The GAN shape of pytorch/pytorch#39141 (docs/ground-truth.md, "Optimizer
// steps and version counters"): the discriminator's Adam step writes its
// parameters in place between its backward (which retains the graph) and
// the generator's backward through D(fake), whose graph saved them.
// RUN: %check_ddpguard --unfixed %s %t -- %mock_flags
#include <torch/torch.h>

struct GeneratorImpl : torch::nn::Module {
  GeneratorImpl() : fc(register_module("fc", torch::nn::Linear(4, 4))) {}
  torch::Tensor forward(const torch::Tensor &z) { return fc(z); }
  torch::nn::Linear fc;
};
TORCH_MODULE(Generator);

// Two layers: the second layer's input derives from the first's weight, so
// the forward saves parameters whatever its input.
struct DiscriminatorImpl : torch::nn::Module {
  DiscriminatorImpl()
      : fc1(register_module("fc1", torch::nn::Linear(4, 8))),
        fc2(register_module("fc2", torch::nn::Linear(8, 1))) {}
  torch::Tensor forward(const torch::Tensor &x) { return fc2(fc1(x)); }
  torch::nn::Linear fc1, fc2;
};
TORCH_MODULE(Discriminator);

void trainStep(Generator G, Discriminator D, torch::Tensor real) {
  torch::optim::Adam optG(G->parameters());
  torch::optim::Adam optD(D->parameters());
  auto fake = G(torch::randn({8, 4}));
  auto dReal = D(real);
  auto dFake = D(fake);
  auto ones = torch::ones_like(real.sum());
  auto lossD = torch::binary_cross_entropy_with_logits(dReal, ones) +
               torch::binary_cross_entropy_with_logits(dFake, ones * 0.0);
  optD.zero_grad();
  lossD.backward({}, /*retain_graph=*/true);
  optD.step();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step of 'optD' writes the parameters of 'D' in place, which the forward at line [[@LINE-7]] saved for backward; the backward at line [[@LINE+7]] through that forward will fail [optimizer-step-before-backward]
  // CHECK-MESSAGES: :[[@LINE-8]]:16: note: forward on 'D' is here; it saved the parameters of 'D' for backward{{$}}
  // CHECK-MESSAGES: :[[@LINE+5]]:9: note: the backward that fails is here
  // CHECK-MESSAGES: :[[@LINE-4]]:3: note: no fix is offered: moving the step after the backward at line [[@LINE+4]] would make it use that backward's gradients too, and recomputing the forward after the step would change what the later loss sees; both change what training computes
  // CHECK-MESSAGES: :[[@LINE-5]]:3: note: judged by LibTorch 2.11.0, assumed
  auto lossG = torch::binary_cross_entropy_with_logits(dFake, ones);
  optG.zero_grad();
  lossG.backward();
  optG.step();
}

// The usual fix: the generator's loss on a forward after D's step.
void recomputed(Generator G, Discriminator D, torch::Tensor real) {
  torch::optim::Adam optG(G->parameters());
  torch::optim::Adam optD(D->parameters());
  auto fake = G(torch::randn({8, 4}));
  auto lossD = D(real).mean() - D(fake.detach()).mean();
  optD.zero_grad();
  lossD.backward();
  optD.step();
  auto lossG = D(fake).mean() * -1.0;
  optG.zero_grad();
  lossG.backward();
  optG.step();
}
