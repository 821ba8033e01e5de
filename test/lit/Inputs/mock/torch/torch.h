// A small stand-in for <torch/torch.h>: the names and signatures ddpguard
// reads, with LibTorch's namespaces, so checker tests parse in milliseconds.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>
// As the real <torch/torch.h> does; test/lit/Inputs/versions/<v> provide one
// per LibTorch version, and without one no version is defined.
#if __has_include(<torch/version.h>) && !defined(MOCK_TORCH_OMITS_VERSION)
#include <torch/version.h>
#endif

namespace c10 {
template <typename T> class optional {
public:
  optional() = default;
  optional(T V) : Value(V), Has(true) {}
private:
  T Value{};
  bool Has = false;
};
template <typename T> class intrusive_ptr {
public:
  T *operator->() const { return Ptr; }
private:
  T *Ptr = nullptr;
};
struct AutoGradMode {
  AutoGradMode(bool Enabled);
  ~AutoGradMode();
};
struct NoGradGuard : AutoGradMode {
  NoGradGuard() : AutoGradMode(false) {}
};
struct InferenceMode {
  InferenceMode(bool Enabled = true);
  ~InferenceMode();
};
struct GradMode {
  static void set_enabled(bool Enabled);
};
} // namespace c10

namespace at {
class Tensor {
public:
  Tensor();
  Tensor(const Tensor &);
  Tensor &operator=(const Tensor &) &;
  // Assigning into a temporary (`h[0] = v`) writes its storage.
  Tensor &operator=(const Tensor &) &&;
  Tensor &operator=(double) &&;
  ~Tensor();
  void backward(const Tensor &Gradient = {},
                c10::optional<bool> RetainGraph = {},
                bool CreateGraph = false,
                c10::optional<std::vector<Tensor>> Inputs = {}) const;
  Tensor detach() const;
  Tensor sum() const;
  Tensor mean() const;
  Tensor pow(double) const;
  Tensor t() const;
  Tensor &add_(const Tensor &, double Alpha = 1);
  Tensor &mul_(double);
  Tensor &clamp_(double Min, double Max);
  Tensor &copy_(const Tensor &);
  Tensor &zero_();
  Tensor &relu_();
  Tensor &fill_(double);
  Tensor &index_put_(std::vector<int64_t> Indices, double Value);
  Tensor mul(double) const;
  Tensor relu() const;
  Tensor clamp(double Min, double Max) const;
  Tensor sigmoid() const;
  Tensor softmax(int64_t Dim) const;
  Tensor view(std::vector<int64_t> Sizes) const;
  Tensor clone() const;
  Tensor &requires_grad_(bool = true);
  Tensor data() const;
  Tensor grad() const;
  Tensor operator[](int64_t) const;
  template <typename T> T item() const;
  int64_t size(int64_t Dim) const;
  Tensor operator+(const Tensor &) const;
  Tensor operator-(const Tensor &) const;
  Tensor operator*(const Tensor &) const;
  Tensor operator*(double) const;
  Tensor operator/(double) const;
  Tensor &operator+=(const Tensor &);
};
Tensor randn(std::vector<int64_t> Sizes);
Tensor randn_like(const Tensor &);
Tensor ones_like(const Tensor &);
Tensor zeros(std::vector<int64_t> Sizes);
Tensor cat(std::vector<Tensor> Tensors);
Tensor relu(const Tensor &);
Tensor sigmoid(const Tensor &);
Tensor tanh(const Tensor &);
Tensor softmax(const Tensor &, int64_t Dim);
Tensor matmul(const Tensor &, const Tensor &);
Tensor binary_cross_entropy_with_logits(const Tensor &, const Tensor &);
using c10::NoGradGuard;
using c10::AutoGradMode;
} // namespace at

namespace torch {
using at::Tensor;
using at::randn;
using at::randn_like;
using at::ones_like;
using at::zeros;
using at::cat;
using at::relu;
using at::sigmoid;
using at::tanh;
using at::softmax;
using at::matmul;
using at::binary_cross_entropy_with_logits;
using at::NoGradGuard;
using at::AutoGradMode;
using c10::InferenceMode;
void manual_seed(uint64_t);
void _foreach_mul_(std::vector<Tensor> Tensors, double);

namespace autograd {
using variable_list = std::vector<Tensor>;
void backward(const variable_list &Tensors, const variable_list &GradTensors = {},
              c10::optional<bool> RetainGraph = {}, bool CreateGraph = false,
              const variable_list &Inputs = {});
variable_list grad(const variable_list &Outputs, const variable_list &Inputs,
                   const variable_list &GradOutputs = {},
                   c10::optional<bool> RetainGraph = {},
                   bool CreateGraph = false, bool AllowUnused = false);
} // namespace autograd

namespace nn {
namespace init {
Tensor zeros_(Tensor);
} // namespace init
namespace utils {
double clip_grad_norm_(std::vector<Tensor> Parameters, double MaxNorm);
} // namespace utils
class Module {
public:
  virtual ~Module() = default;
  template <typename M> M register_module(std::string Name, M Module);
  Tensor &register_buffer(std::string Name, Tensor Buffer);
  Tensor &register_parameter(std::string Name, Tensor Parameter);
  std::vector<Tensor> parameters() const;
  // LibTorch's is an OrderedDict<std::string, Tensor>, whose items have
  // key() and value().
  struct NamedParameter {
    const std::string &key() const;
    Tensor &value();
  };
  std::vector<NamedParameter> named_parameters() const;
  void train(bool On = true);
  void eval();
};
template <typename Contained> class ModuleHolder {
public:
  ModuleHolder() : Impl(std::make_shared<Contained>()) {}
  // Empty, as LibTorch's: the module is assigned later.
  ModuleHolder(std::nullptr_t) {}
  template <typename... Args>
  ModuleHolder(Args &&...A) : Impl(std::make_shared<Contained>(A...)) {}
  Contained *operator->() const { return Impl.get(); }
  Contained &operator*() const { return *Impl; }
  template <typename... Args> Tensor operator()(Args &&...A) {
    return Impl->forward(A...);
  }
  std::shared_ptr<Contained> ptr() const { return Impl; }
private:
  std::shared_ptr<Contained> Impl;
};
#define TORCH_MODULE(Name)                                                     \
  class Name : public torch::nn::ModuleHolder<Name##Impl> {                    \
  public:                                                                      \
    using torch::nn::ModuleHolder<Name##Impl>::ModuleHolder;                   \
  }

class LinearImpl : public Module {
public:
  LinearImpl(int64_t In, int64_t Out);
  Tensor forward(const Tensor &);
  Tensor weight, bias;
};
TORCH_MODULE(Linear);
// Options as LibTorch's: chained setters (test/lit/checks/ddp-multiple-forward-before-backward/saved-buffers.cpp).
struct BatchNorm1dOptions {
  BatchNorm1dOptions(int64_t Features);
  BatchNorm1dOptions &track_running_stats(bool On);
};
struct InstanceNorm1dOptions {
  InstanceNorm1dOptions(int64_t Features);
  InstanceNorm1dOptions &track_running_stats(bool On);
};
class BatchNorm1dImpl : public Module {
public:
  explicit BatchNorm1dImpl(int64_t Features);
  explicit BatchNorm1dImpl(BatchNorm1dOptions Options);
  Tensor forward(const Tensor &);
  Tensor running_mean, running_var;
};
TORCH_MODULE(BatchNorm1d);
class BatchNorm2dImpl : public Module {
public:
  explicit BatchNorm2dImpl(int64_t Features);
  Tensor forward(const Tensor &);
};
TORCH_MODULE(BatchNorm2d);
// Normalisation layers without buffers saved for backward
// (test/lit/checks/ddp-multiple-forward-before-backward/saved-buffers.cpp).
class InstanceNorm1dImpl : public Module {
public:
  explicit InstanceNorm1dImpl(InstanceNorm1dOptions Options);
  Tensor forward(const Tensor &);
};
TORCH_MODULE(InstanceNorm1d);
class LayerNormImpl : public Module {
public:
  explicit LayerNormImpl(std::vector<int64_t> Shape);
  Tensor forward(const Tensor &);
};
TORCH_MODULE(LayerNorm);
class LSTMCellImpl : public Module {
public:
  LSTMCellImpl(int64_t In, int64_t Hidden);
  Tensor forward(const Tensor &);
};
TORCH_MODULE(LSTMCell);
class SequentialImpl : public Module {
public:
  template <typename... M> explicit SequentialImpl(M &&...Modules);
  Tensor forward(const Tensor &);
};
TORCH_MODULE(Sequential);
} // namespace nn
} // namespace torch

// In a torch/optim folder, as LibTorch's optimizers are (tools/ddpguard/
// Relevance.h counts optimizer names only outside one).
#include <torch/optim/optim.h>
