#include <torch/torch.h>

torch::Tensor add(torch::Tensor a, torch::Tensor b) { return a + b; }
