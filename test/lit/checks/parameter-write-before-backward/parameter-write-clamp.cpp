// WGAN weight clipping between the critic's backward (which retains the
// graph) and the generator's backward through C(fake): `p.clamp_()` under
// NoGradGuard bumps each parameter's version counter, and the forward saved
// them (test/corpus/programs/wgan_clip_nograd_clamp.cpp). The critic's SGD
// step writes nothing autograd checks: silent-write-before-backward's.
// RUN: %check_ddpguard --unfixed %s %t -- %mock_flags
#include <torch/torch.h>
#include <torch/optim/optim.h>

void clipCritic(torch::nn::Sequential G, torch::nn::Sequential critic,
                torch::Tensor real, double clip) {
  torch::optim::SGD optC(critic->parameters(), 5e-3);
  auto fakeScore = critic(G(torch::randn({8, 4})));
  auto lossC = fakeScore.mean() - critic(real).mean();
  lossC.backward({}, /*retain_graph=*/true);
  optC.step();
  // CHECK-MESSAGES: :[[@LINE-1]]:3: warning: step of 'optC' (torch::optim::SGD) writes the parameters of 'critic' in place{{.*}}[silent-write-before-backward]
  {
    torch::NoGradGuard noGrad;
    for (auto &p : critic->parameters())
      p.clamp_(-clip, clip);
    // CHECK-MESSAGES: :[[@LINE-1]]:9: warning: 'clamp_' writes a parameter of 'critic' in place, which the forward at line [[@LINE-9]] saved for backward; the backward at line [[@LINE+8]] through that forward will fail [parameter-write-before-backward]
    // CHECK-MESSAGES: :[[@LINE-2]]:7: note: 'p' is one of the parameters of 'critic'; an in-place write bumps its version counter in any grad mode, NoGradGuard included
    // CHECK-MESSAGES: :[[@LINE-11]]:20: note: forward on 'critic' is here; it saved the parameters of 'critic' for backward{{$}}
    // CHECK-MESSAGES: :[[@LINE+5]]:9: note: the backward that fails is here
    // CHECK-MESSAGES: :[[@LINE-5]]:9: note: no fix is offered: moving the write after the backward at line [[@LINE+4]], or recomputing the forward after the write, changes which weights the later backward and loss see; both change what training computes
    // CHECK-MESSAGES: :[[@LINE-6]]:9: note: judged by LibTorch 2.11.0, assumed
  }
  auto lossG = fakeScore.mean() * -1.0;
  lossG.backward();
}

// The same clipping through named_parameters(), and through a loop
// variable that is a copy (a tensor is a handle: it shares the counter).
void clipNamed(torch::nn::Sequential critic, torch::Tensor real, double clip) {
  auto score = critic(real).mean();
  score.backward({}, /*retain_graph=*/true);
  for (auto &item : critic->named_parameters())
    item.value().clamp_(-clip, clip);
  // CHECK-MESSAGES: :[[@LINE-1]]:18: warning: 'clamp_' writes a parameter of 'critic' in place, which the forward at line [[@LINE-4]] saved for backward; the backward at line [[@LINE+9]] through that forward will fail [parameter-write-before-backward]
  // CHECK-MESSAGES: :[[@LINE-2]]:5: note: 'item.value()' is one of the parameters of 'critic'
  // CHECK-MESSAGES: :[[@LINE-6]]:16: note: forward on 'critic' is here
  // CHECK-MESSAGES: :[[@LINE+6]]:9: note: the backward that fails is here
  // CHECK-MESSAGES: :[[@LINE-5]]:18: note: no fix is offered
  // CHECK-MESSAGES: :[[@LINE-6]]:18: note: judged by
  for (auto p : critic->parameters())
    p.zero_();
  // CHECK-MESSAGES: :[[@LINE-1]]:7: warning: 'zero_' writes a parameter of 'critic' in place, which the forward at line [[@LINE-12]] saved for backward; the backward at line [[@LINE+1]] through that forward will fail [parameter-write-before-backward]
  score.backward();
  // CHECK-MESSAGES: :[[@LINE-3]]:5: note: 'p' is one of the parameters of 'critic'
  // CHECK-MESSAGES: :[[@LINE-15]]:16: note: forward on 'critic' is here
  // CHECK-MESSAGES: :[[@LINE-3]]:9: note: the backward that fails is here
  // CHECK-MESSAGES: :[[@LINE-6]]:7: note: no fix is offered
  // CHECK-MESSAGES: :[[@LINE-7]]:7: note: judged by
}
