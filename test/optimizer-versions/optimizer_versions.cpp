// Which torch::optim steps bump the version counters of the parameters they
// update, in LibTorch (issue 18, item 1). The twin of optimizer_versions.py,
// with the same cases and the same output; built and run against each venv's
// LibTorch by scripts/optimizer-versions.sh.
//
// Every case builds a fresh torch::nn::Linear(4, 3) (manual_seed(0)) and an
// optimizer over its parameters, then, three times: a backward of
// lin(d).pow(2).sum() (d without grad) fills the gradients; h = lin(x) with x
// requiring grad (the graph saves the weight) and c = lin(d) (the control:
// the graph saves only d); the write under test (step(), or what the case
// names); then h.sum().backward() and c.sum().backward(). One line per case:
//
//   case<TAB>NAME<TAB>cpp<TAB>CELL
//
// CELL is "+N ok" or "+N error": N the weight's _version() delta per step
// ("/"-joined when the steps differ; the bias's added when it differs),
// error when the backward through h failed with autograd's in-place error;
// ", silent" when it ran although the write changed the weight (x.grad was
// computed with the new weight); "(control error)" when the backward through
// c failed; the grad's fate for zero_grad.

#include <torch/torch.h>

#include <functional>
#include <iostream>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace {

constexpr int Steps = 3;
using Make = std::function<std::unique_ptr<torch::optim::Optimizer>(
    std::vector<torch::Tensor>)>;
using Write = std::function<void(torch::optim::Optimizer &, torch::nn::Linear &,
                                 const torch::Tensor &)>;

bool backwardFails(const torch::Tensor &T) {
  try {
    T.sum().backward();
    return false;
  } catch (const c10::Error &E) {
    if (std::string(E.what()).find("modified by an inplace operation") !=
        std::string::npos)
      return true;
    throw;
  }
}

std::string joined(const std::vector<int64_t> &Deltas) {
  if (std::set<int64_t>(Deltas.begin(), Deltas.end()).size() == 1)
    return std::to_string(Deltas[0]);
  std::string S;
  for (size_t I = 0; I < Deltas.size(); ++I)
    S += (I ? "/" : "") + std::to_string(Deltas[I]);
  return S;
}

std::string joinedStrings(const std::vector<std::string> &Parts) {
  if (std::set<std::string>(Parts.begin(), Parts.end()).size() == 1)
    return Parts[0];
  std::string S;
  for (size_t I = 0; I < Parts.size(); ++I)
    S += (I ? "/" : "") + Parts[I];
  return S;
}

void step(torch::optim::Optimizer &Opt, torch::nn::Linear &Lin,
          const torch::Tensor &D) {
  if (dynamic_cast<torch::optim::LBFGS *>(&Opt)) {
    Opt.step([&] {
      Opt.zero_grad();
      auto Loss = Lin(D).pow(2).sum();
      Loss.backward();
      return Loss;
    });
    return;
  }
  Opt.step();
}

std::string measure(const Make &MakeOpt, const Write &W = step,
                    bool Fill = true, std::string *Grads = nullptr) {
  torch::manual_seed(0);
  torch::nn::Linear Lin(4, 3);
  auto Opt = MakeOpt(Lin->parameters());
  std::vector<int64_t> DW, DB;
  std::vector<bool> Fails, Control, Silent;
  std::vector<std::string> GradFate;
  for (int S = 0; S < Steps; ++S) {
    auto D = torch::randn({2, 4});
    Opt->zero_grad(/*set_to_none=*/true);
    if (Fill)
      Lin(D).pow(2).sum().backward();
    auto X = torch::randn({2, 4}, torch::requires_grad());
    auto H = Lin(X), C = Lin(D);
    int64_t W0 = Lin->weight._version(), B0 = Lin->bias._version();
    bool HadGrad = Lin->weight.grad().defined();
    int64_t G0 = HadGrad ? Lin->weight.grad()._version() : 0;
    auto Before = Lin->weight.detach().clone();
    W(*Opt, Lin, D);
    DW.push_back(Lin->weight._version() - W0);
    DB.push_back(Lin->bias._version() - B0);
    const auto &G = Lin->weight.grad();
    GradFate.push_back(!G.defined() ? "undefined"
                       : HadGrad    ? "+" + std::to_string(G._version() - G0)
                                    : "new");
    Fails.push_back(backwardFails(H));
    Silent.push_back(!Fails.back() && !torch::equal(Before, Lin->weight) &&
                     torch::equal(X.grad(), torch::ones({2, 3}).mm(
                                                Lin->weight.detach())));
    Control.push_back(backwardFails(C));
  }
  auto Any = [](const std::vector<bool> &V) {
    for (bool B : V)
      if (B)
        return true;
    return false;
  };
  auto All = [](const std::vector<bool> &V) {
    for (bool B : V)
      if (!B)
        return false;
    return true;
  };
  std::string Cell = "+" + joined(DW);
  if (DB != DW)
    Cell = "w +" + joined(DW) + " b +" + joined(DB);
  if (All(Fails))
    Cell += " error";
  else if (!Any(Fails))
    Cell += " ok";
  else {
    Cell += " ";
    for (size_t I = 0; I < Fails.size(); ++I)
      Cell += std::string(I ? "/" : "") + (Fails[I] ? "error" : "ok");
  }
  if (Any(Silent))
    Cell += ", silent";
  if (Any(Control))
    Cell += " (control error)";
  if (Grads)
    *Grads = joinedStrings(GradFate);
  return Cell;
}

template <typename Opt, typename Options> Make make(Options O) {
  return [O](std::vector<torch::Tensor> P) {
    return std::make_unique<Opt>(std::move(P), O);
  };
}

void print(const std::string &Name, const std::string &Cell) {
  std::cout << "case\t" << Name << "\tcpp\t" << Cell << "\n";
}

} // namespace

int main() {
  using namespace torch::optim;
  torch::set_num_threads(1);
  print("SGD", measure(make<SGD>(SGDOptions(0.1))));
  print("SGD momentum=0.9", measure(make<SGD>(SGDOptions(0.1).momentum(0.9))));
  print("SGD momentum=0.9 nesterov",
        measure(make<SGD>(SGDOptions(0.1).momentum(0.9).nesterov(true))));
  print("SGD weight_decay=0.01",
        measure(make<SGD>(SGDOptions(0.1).weight_decay(0.01))));
  print("Adam", measure(make<Adam>(AdamOptions(0.01))));
  print("AdamW", measure(make<AdamW>(AdamWOptions(0.01))));
  print("RMSprop", measure(make<RMSprop>(RMSpropOptions(0.01))));
  print("Adagrad", measure(make<Adagrad>(AdagradOptions(0.01))));
  print("LBFGS max_iter=1",
        measure(make<LBFGS>(LBFGSOptions(0.1).max_iter(1))));
  auto Sgd = make<SGD>(SGDOptions(0.1));
  for (bool None : {true, false}) {
    std::string Grads;
    std::string Cell = measure(
        Sgd,
        [None](Optimizer &O, torch::nn::Linear &, const torch::Tensor &) {
          O.zero_grad(None);
        },
        true, &Grads);
    print(std::string("zero_grad(set_to_none=") + (None ? "True" : "False") +
              ")",
          Cell + ", grad " + Grads);
  }
  print("SGD step, every grad None", measure(Sgd, step, /*Fill=*/false));
  print("control: p.mul_(0.5) under no_grad",
        measure(Sgd, [](Optimizer &, torch::nn::Linear &L, const torch::Tensor &) {
          torch::NoGradGuard NoGrad;
          L->weight.mul_(0.5);
          L->bias.mul_(0.5);
        }));
  print("control: p.data.mul_(0.5)",
        measure(Sgd, [](Optimizer &, torch::nn::Linear &L, const torch::Tensor &) {
          L->weight.data().mul_(0.5);
          L->bias.data().mul_(0.5);
        }));
  print("control: p.detach().mul_(0.5)",
        measure(Sgd, [](Optimizer &, torch::nn::Linear &L, const torch::Tensor &) {
          L->weight.detach().mul_(0.5);
          L->bias.detach().mul_(0.5);
        }));
  std::cerr << "version\tcpp\t" << TORCH_VERSION << "\n";
  return 0;
}
