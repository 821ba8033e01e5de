// LibTorch 2.13.0's <torch/version.h>, as the torch wheel ships it.
#pragma once
#define TORCH_VERSION_MAJOR 2
#define TORCH_VERSION_MINOR 13
#define TORCH_VERSION_PATCH 0
#define TORCH_VERSION "2.13.0"
