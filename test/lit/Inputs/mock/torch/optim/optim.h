// LibTorch's optimizers as the mock <torch/torch.h> needs them: a base
// class with a virtual step (test/lit/checks/optimizer-step-before-backward/).
#pragma once

namespace torch {
namespace optim {
class Optimizer {
public:
  virtual ~Optimizer() = default;
  void zero_grad();
  virtual Tensor step();
};
struct AdamOptions {
  AdamOptions(double LearningRate = 1e-3);
};
class SGD : public Optimizer {
public:
  SGD(std::vector<Tensor> Parameters, double LearningRate);
  Tensor step() override;
};
#define MOCK_TORCH_OPTIMIZER(Name)                                             \
  class Name : public Optimizer {                                              \
  public:                                                                      \
    Name(std::vector<Tensor> Parameters, AdamOptions Options = {});            \
    Tensor step() override;                                                    \
  }
MOCK_TORCH_OPTIMIZER(Adam);
MOCK_TORCH_OPTIMIZER(AdamW);
MOCK_TORCH_OPTIMIZER(RMSprop);
MOCK_TORCH_OPTIMIZER(Adagrad);
MOCK_TORCH_OPTIMIZER(LBFGS);
#undef MOCK_TORCH_OPTIMIZER
} // namespace optim
} // namespace torch
