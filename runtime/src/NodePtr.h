// How autograd holds a Node: std::shared_ptr until 2.12, c10::intrusive_ptr
// from 2.13 (Node became a c10::intrusive_ptr_target; Edge::function,
// grad_fn(), SavedVariable::unpack and compiled autograd's NodeCall followed).
#pragma once

#include <ddpguard/runtime/TorchVersion.h>

#include <torch/csrc/autograd/function.h>

#include <memory>

namespace ddpguard::detail {

#if DDPGUARD_INTRUSIVE_NODES
using NodePtr = c10::intrusive_ptr<torch::autograd::Node>;
using WeakNodePtr = c10::weak_intrusive_ptr<torch::autograd::Node>;
#else
using NodePtr = std::shared_ptr<torch::autograd::Node>;
using WeakNodePtr = std::weak_ptr<torch::autograd::Node>;
#endif

} // namespace ddpguard::detail
