// The shapes the bug takes in real training code (docs/ground-truth.md), and
// the ways programs hold and call a DDP object.
// RUN: %check_ddpguard %s %t -- %mock_flags
#include <nets.h>

// GAN discriminator on fake, then real, one backward (pytorch#175024).
void ganDiscriminator(Net netD, Net netG, PG pg, torch::Tensor z,
                      torch::Tensor real, torch::Tensor ones,
                      torch::Tensor zeros) {
  DDP D(netD, pg);
  // CHECK-FIXES: DDP D(netD, pg, ddpguard::DDPOptions().broadcast_buffers(false));
  auto fake = netG(z).detach();
  auto fakeOut = D(fake);
  auto realOut = D(real);
  // CHECK-MESSAGES: :[[@LINE-1]]:18: warning: forward call on DDP-wrapped 'D' before the backward of the forward at line [[@LINE-2]]: DDP broadcasts buffers
  // CHECK-MESSAGES: :[[@LINE-3]]:18: note: earlier forward on 'D' is here
  auto loss = torch::binary_cross_entropy_with_logits(fakeOut, zeros) +
              torch::binary_cross_entropy_with_logits(realOut, ones);
  loss.backward();
}

// WGAN-GP: the gradient penalty differentiates through a third forward.
void gradientPenalty(Net netD, PG pg, torch::Tensor real, torch::Tensor fake,
                     torch::Tensor alpha) {
  DDP D(netD, pg);
  // CHECK-FIXES: DDP D(netD, pg, ddpguard::DDPOptions().broadcast_buffers(false));
  auto realScore = D(real).mean();
  auto fakeScore = D(fake).mean();
  // CHECK-MESSAGES: :[[@LINE-1]]:20: warning: forward call on DDP-wrapped 'D' before the backward of the forward at line [[@LINE-2]]: DDP broadcasts buffers
  // CHECK-MESSAGES: :[[@LINE-3]]:20: note: earlier forward on 'D' is here
  auto mixed = alpha * real + (torch::ones_like(alpha) - alpha) * fake;
  auto mixedScore = D(mixed);
  // CHECK-MESSAGES: :[[@LINE-1]]:21: warning: forward call on DDP-wrapped 'D' before the backward of the forward at line [[@LINE-6]]: DDP broadcasts buffers
  // CHECK-MESSAGES: :[[@LINE-7]]:20: note: earlier forward on 'D' is here
  auto grads = torch::autograd::grad({mixedScore.sum()}, {mixed}, {},
                                     /*retain_graph=*/true,
                                     /*create_graph=*/true);
  auto penalty = (grads[0] - torch::ones_like(alpha)).pow(2).mean();
  (fakeScore - realScore + penalty * 10.0).backward();
  // CHECK-MESSAGES: :[[@LINE-1]]:44: note: the backward that fails is here
}

// Recurrent module called once per time step, backward through time.
void recurrentPerStep(Net cell, PG pg, std::vector<torch::Tensor> steps,
                      torch::Tensor h) {
  DDP D(cell, pg);
  // CHECK-FIXES: DDP D(cell, pg, ddpguard::DDPOptions().broadcast_buffers(false));
  for (const auto &x : steps)
    h = D(x + h);
  // CHECK-MESSAGES: :[[@LINE-1]]:9: warning: forward call on DDP-wrapped 'D' before the backward of the forward at line [[@LINE-1]]: DDP broadcasts buffers
  // CHECK-MESSAGES: :[[@LINE-2]]:9: note: the forwards happen in different iterations of the loop at line [[@LINE-3]]
  h.sum().backward();
}

// Outputs collected in a container.
void collected(Net net, PG pg, std::vector<torch::Tensor> views) {
  DDP D(net, pg);
  // CHECK-FIXES: DDP D(net, pg, ddpguard::DDPOptions().broadcast_buffers(false));
  std::vector<torch::Tensor> outs;
  for (const auto &v : views)
    outs.push_back(D(v));
  // CHECK-MESSAGES: :[[@LINE-1]]:20: warning: forward call on DDP-wrapped 'D' before the backward of the forward at line [[@LINE-1]]: DDP broadcasts buffers
  // CHECK-MESSAGES: :[[@LINE-2]]:20: note: the forwards happen in different iterations of the loop at line [[@LINE-3]]
  torch::cat(outs).sum().backward();
}

// A helper that forwards, called twice before one backward.
torch::Tensor encode(DDP &model, const torch::Tensor &x) { return model(x); }

void viaHelper(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP D(net, pg);
  // CHECK-FIXES: DDP D(net, pg, ddpguard::DDPOptions().broadcast_buffers(false));
  auto z1 = encode(D, a);
  auto z2 = encode(D, b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'D' before the backward of the forward at line [[@LINE-2]]: DDP broadcasts buffers
  // CHECK-MESSAGES: :[[@LINE-8]]:67: note: the forward runs inside 'encode' here
  // CHECK-MESSAGES: :[[@LINE-4]]:13: note: earlier forward on 'D' is here
  // CHECK-MESSAGES: :[[@LINE-4]]:13: note: cannot fuse the forwards: a forward runs inside a called function
  (z1 * z2).sum().backward();
}

// A lambda that forwards.
void viaLambda(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP D(net, pg);
  // CHECK-FIXES: DDP D(net, pg, ddpguard::DDPOptions().broadcast_buffers(false));
  auto embed = [&](const torch::Tensor &x) { return D(x).mean(); };
  auto loss = embed(a) + embed(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:26: warning: forward call on DDP-wrapped 'D' before the backward of the forward at line [[@LINE-1]]: DDP broadcasts buffers
  // CHECK-MESSAGES: :[[@LINE-3]]:53: note: the forward runs inside the lambda here
  // CHECK-MESSAGES: :[[@LINE-3]]:15: note: earlier forward on 'D' is here
  loss.backward();
}

// A smart pointer, called through -> and (*p)().
void viaPointer(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  auto D = std::make_shared<DDP>(net, pg);
  // CHECK-FIXES: auto D = std::make_shared<DDP>(net, pg, ddpguard::DDPOptions().broadcast_buffers(false));
  auto o1 = D->forward(a);
  auto o2 = (*D)(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'D' before the backward of the forward at line [[@LINE-2]]: DDP broadcasts buffers
  // CHECK-MESSAGES: :[[@LINE-3]]:13: note: earlier forward on 'D' is here
  (o1 - o2).sum().backward();
}

// A member, used by a member function that forwards and one that trains.
class Trainer {
public:
  Trainer(Net net, PG pg) : model_(net, pg) {}
  // CHECK-FIXES: Trainer(Net net, PG pg) : model_(net, pg, ddpguard::DDPOptions().broadcast_buffers(false)) {}
  torch::Tensor encode(const torch::Tensor &x) { return this->model_(x); }
  void step(const torch::Tensor &a, const torch::Tensor &b) {
    auto z1 = encode(a);
    auto z2 = encode(b);
    // CHECK-MESSAGES: :[[@LINE-1]]:15: warning: forward call on DDP-wrapped 'model_' before the backward of the forward at line [[@LINE-2]]: DDP broadcasts buffers
    // CHECK-MESSAGES: :[[@LINE-5]]:57: note: the forward runs inside 'encode' here
    (z1 + z2).sum().backward();
    // CHECK-MESSAGES: :[[@LINE-1]]:21: note: the backward that fails is here
    // CHECK-MESSAGES: :[[@LINE-10]]:29: note: 'broadcast_buffers' is true by default in this construction of 'model_'
  }

private:
  DDP model_;
};

// Two DDP objects never interact.
void twoObjects(Net n1, Net n2, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP first(n1, pg);
  DDP second(n2, pg);
  auto o1 = first(a);
  auto o2 = second(b);
  (o1 + o2).sum().backward();
}

// One forward per path is fine.
void oneForwardPerBranch(Net net, PG pg, bool useA, torch::Tensor a,
                         torch::Tensor b) {
  DDP D(net, pg);
  torch::Tensor out;
  if (useA)
    out = D(a);
  else
    out = D(b);
  out.sum().backward();
}

// Grad-mode scopes other than NoGradGuard.
void gradModeScopes(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP D(net, pg);
  {
    torch::AutoGradMode disabled(false);
    D(a);
  }
  {
    c10::InferenceMode inference;
    D(b);
  }
  D(a).sum().backward();
}

// break leaves the loop before any second forward is backpropagated.
void earlyExit(Net net, PG pg, std::vector<torch::Tensor> xs) {
  DDP D(net, pg);
  for (const auto &x : xs) {
    auto loss = D(x).sum();
    if (loss.item<float>() < 0)
      break;
    loss.backward();
  }
}
