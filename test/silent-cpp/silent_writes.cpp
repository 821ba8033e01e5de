// Which writes between a forward and a backward through it are silent in
// LibTorch (issue 30): the truth behind silent-write-before-backward's C++
// side. Each shape runs twice: as written, and with the write deferred until
// after the backward (the reference). It prints one line per shape:
//
//   shape<TAB>NAME<TAB>LABEL
//
// LABEL is "raises" when the backward as written throws autograd's in-place
// error, "silent" when it runs and the gradients differ from the
// reference's, "trains" when they are equal (bit for bit: both runs do the
// same operations but the write). Each shape's expected label and its write
// are marked in the comments `silent-cpp: shape NAME expect LABEL` and
// `silent-cpp: written`; silent_cpp.py compares both the run and the
// checker's findings on this file with them.
//
//   silent_writes [SHAPE]   (all shapes without an argument)

#include <torch/torch.h>

#include <functional>
#include <iostream>
#include <string>
#include <vector>

namespace {

std::vector<torch::Tensor> gradients(const std::vector<torch::Tensor> &Params) {
  std::vector<torch::Tensor> Grads;
  for (const torch::Tensor &P : Params)
    Grads.push_back(P.grad().clone());
  return Grads;
}

torch::nn::Sequential discriminator() {
  return torch::nn::Sequential(torch::nn::Linear(4, 8), torch::nn::ReLU(),
                               torch::nn::Linear(8, 1));
}

// silent-cpp: shape sgd-step expect silent
// The GAN of pytorch/pytorch#39141 with LibTorch's SGD: D's step, before G's
// backward through D->forward(fake), writes D's parameters through p.data().
std::vector<torch::Tensor> sgdStep(bool Deferred) {
  torch::manual_seed(0);
  torch::nn::Linear G(4, 4);
  torch::nn::Sequential D = discriminator();
  torch::optim::SGD optD(D->parameters(), 0.1);
  auto fake = G(torch::randn({5, 4}));
  auto dFake = D->forward(fake);
  auto lossD = torch::softplus(dFake).mean() +
               torch::softplus(-D->forward(torch::randn({5, 4}))).mean();
  lossD.backward({}, /*retain_graph=*/true);
  if (!Deferred)
    optD.step(); // silent-cpp: written
  G->zero_grad();
  torch::softplus(-dFake).mean().backward();
  if (Deferred)
    optD.step();
  return gradients(G->parameters());
}

// silent-cpp: shape adam-step expect raises
// The same with Adam, whose step bumps the parameters' version counters.
std::vector<torch::Tensor> adamStep(bool Deferred) {
  torch::manual_seed(0);
  torch::nn::Linear G(4, 4);
  torch::nn::Sequential D = discriminator();
  torch::optim::Adam optD(D->parameters(), torch::optim::AdamOptions(0.1));
  auto fake = G(torch::randn({5, 4}));
  auto dFake = D->forward(fake);
  auto lossD = torch::softplus(dFake).mean() +
               torch::softplus(-D->forward(torch::randn({5, 4}))).mean();
  lossD.backward({}, /*retain_graph=*/true);
  if (!Deferred)
    optD.step(); // silent-cpp: written
  G->zero_grad();
  torch::softplus(-dFake).mean().backward();
  if (Deferred)
    optD.step();
  return gradients(G->parameters());
}

// silent-cpp: shape data-add expect silent
// D updated by hand through p.data(), old-style SGD.
std::vector<torch::Tensor> dataAdd(bool Deferred) {
  torch::manual_seed(0);
  torch::nn::Linear G(4, 4);
  torch::nn::Sequential D = discriminator();
  auto fake = G(torch::randn({5, 4}));
  auto dFake = D->forward(fake);
  auto lossD = torch::softplus(dFake).mean() +
               torch::softplus(-D->forward(torch::randn({5, 4}))).mean();
  lossD.backward({}, /*retain_graph=*/true);
  if (!Deferred)
    for (auto &p : D->parameters())
      p.data().add_(p.grad(), -0.1); // silent-cpp: written
  G->zero_grad();
  torch::softplus(-dFake).mean().backward();
  if (Deferred)
    for (auto &p : D->parameters())
      p.data().add_(p.grad(), -0.1);
  return gradients(G->parameters());
}

// silent-cpp: shape data-clamp expect silent
// WGAN's weight clipping through w.data().
std::vector<torch::Tensor> dataClamp(bool Deferred) {
  torch::manual_seed(0);
  torch::nn::Linear G(4, 4);
  torch::nn::Sequential D = discriminator();
  auto fake = G(torch::randn({5, 4}));
  auto dFake = D->forward(fake);
  auto lossD = dFake.mean() - D->forward(torch::randn({5, 4})).mean();
  lossD.backward({}, /*retain_graph=*/true);
  if (!Deferred)
    for (auto &w : D->parameters())
      w.data().clamp_(-0.01, 0.01); // silent-cpp: written
  G->zero_grad();
  (-dFake.mean()).backward();
  if (Deferred)
    for (auto &w : D->parameters())
      w.data().clamp_(-0.01, 0.01);
  return gradients(G->parameters());
}

// silent-cpp: shape data-unsaved expect trains
// The control: G's forward on an input without grad saves none of G's
// parameters, so writing them through .data() changes no gradient.
std::vector<torch::Tensor> dataUnsaved(bool Deferred) {
  torch::manual_seed(0);
  torch::nn::Linear G(4, 4);
  torch::nn::Sequential D = discriminator();
  auto fake = G(torch::randn({5, 4}));
  auto dFake = D->forward(fake);
  if (!Deferred)
    G->weight.data().mul_(2); // silent-cpp: written
  torch::softplus(-dFake).mean().backward();
  if (Deferred)
    G->weight.data().mul_(2);
  return gradients(G->parameters());
}

// silent-cpp: shape step-after expect trains
// The control: D's SGD step after G's backward.
std::vector<torch::Tensor> stepAfter(bool Deferred) {
  torch::manual_seed(0);
  torch::nn::Linear G(4, 4);
  torch::nn::Sequential D = discriminator();
  torch::optim::SGD optD(D->parameters(), 0.1);
  auto fake = G(torch::randn({5, 4}));
  auto dFake = D->forward(fake);
  auto lossD = torch::softplus(dFake).mean() +
               torch::softplus(-D->forward(torch::randn({5, 4}))).mean();
  lossD.backward({}, /*retain_graph=*/true);
  G->zero_grad();
  torch::softplus(-dFake).mean().backward();
  optD.step(); // silent-cpp: written
  return gradients(G->parameters());
}

// silent-cpp: shape saved-value-data expect silent
// sigmoid saves its result; a write through its .data() changes what the
// backward reads.
std::vector<torch::Tensor> savedValueData(bool Deferred) {
  torch::manual_seed(0);
  torch::nn::Linear lin(4, 4);
  auto gate = torch::sigmoid(lin(torch::randn({5, 4})));
  if (!Deferred)
    gate.data().mul_(2); // silent-cpp: written
  gate.sum().backward();
  if (Deferred)
    gate.data().mul_(2);
  return gradients(lin->parameters());
}

// silent-cpp: shape saved-value expect raises
// The same write on the tensor itself bumps its version counter.
std::vector<torch::Tensor> savedValue(bool Deferred) {
  torch::manual_seed(0);
  torch::nn::Linear lin(4, 4);
  auto gate = torch::sigmoid(lin(torch::randn({5, 4})));
  if (!Deferred)
    gate.mul_(2); // silent-cpp: written
  gate.sum().backward();
  if (Deferred)
    gate.mul_(2);
  return gradients(lin->parameters());
}

// silent-cpp: shape sgd-loop expect silent
// A retained graph backpropagated in every iteration: the SGD step of one
// iteration is before the backward of the next.
std::vector<torch::Tensor> sgdLoop(bool Deferred) {
  torch::manual_seed(0);
  torch::nn::Linear G(4, 4);
  torch::nn::Sequential D = discriminator();
  torch::optim::SGD optD(D->parameters(), 0.1);
  auto out = D->forward(G(torch::randn({5, 4})));
  for (int i = 0; i < 2; ++i) {
    out.mean().backward({}, /*retain_graph=*/true);
    if (!Deferred)
      optD.step(); // silent-cpp: written
  }
  if (Deferred)
    for (int i = 0; i < 2; ++i)
      optD.step();
  return gradients(G->parameters());
}

// silent-cpp: shape data-no-grad expect silent
// NoGradGuard changes nothing: the write through .data() is silent in any
// grad mode.
std::vector<torch::Tensor> dataNoGrad(bool Deferred) {
  torch::manual_seed(0);
  torch::nn::Linear G(4, 4);
  torch::nn::Sequential D = discriminator();
  auto out = D->forward(G(torch::randn({5, 4})));
  if (!Deferred) {
    torch::NoGradGuard noGrad;
    for (auto &p : D->parameters())
      p.data().mul_(0.5); // silent-cpp: written
  }
  out.sum().backward();
  if (Deferred) {
    torch::NoGradGuard noGrad;
    for (auto &p : D->parameters())
      p.data().mul_(0.5);
  }
  return gradients(G->parameters());
}

std::string label(const std::function<std::vector<torch::Tensor>(bool)> &Run) {
  std::vector<torch::Tensor> Written;
  try {
    Written = Run(false);
  } catch (const c10::Error &E) {
    if (std::string(E.what()).find("modified by an inplace operation") !=
        std::string::npos)
      return "raises";
    throw;
  }
  std::vector<torch::Tensor> Reference = Run(true);
  for (size_t I = 0; I < Written.size(); ++I)
    if (!torch::equal(Written[I], Reference[I]))
      return "silent";
  return "trains";
}

} // namespace

int main(int Argc, char **Argv) {
  const std::vector<
      std::pair<std::string, std::vector<torch::Tensor> (*)(bool)>>
      Shapes = {{"sgd-step", sgdStep},
                {"adam-step", adamStep},
                {"data-add", dataAdd},
                {"data-clamp", dataClamp},
                {"data-unsaved", dataUnsaved},
                {"step-after", stepAfter},
                {"saved-value-data", savedValueData},
                {"saved-value", savedValue},
                {"sgd-loop", sgdLoop},
                {"data-no-grad", dataNoGrad}};
  bool Found = false;
  for (const auto &[Name, Run] : Shapes)
    if (Argc < 2 || Name == Argv[1]) {
      std::cout << "shape\t" << Name << '\t' << label(Run) << '\n';
      Found = true;
    }
  if (!Found) {
    std::cerr << "silent_writes: no shape " << Argv[1] << '\n';
    return 2;
  }
  return 0;
}
