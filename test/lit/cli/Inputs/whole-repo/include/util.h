// A project header with no DDP in it.
#pragma once
#include <torch/torch.h>

inline torch::Tensor twice(const torch::Tensor &x) { return x + x; }
