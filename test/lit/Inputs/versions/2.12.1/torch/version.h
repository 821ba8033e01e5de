// LibTorch 2.12.1's <torch/version.h>, as the torch wheel ships it.
#pragma once
#define TORCH_VERSION_MAJOR 2
#define TORCH_VERSION_MINOR 12
#define TORCH_VERSION_PATCH 1
#define TORCH_VERSION "2.12.1"
