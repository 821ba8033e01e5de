// LibTorch 2.11.2's <torch/version.h>, as the torch wheel ships it.
#pragma once
#define TORCH_VERSION_MAJOR 2
#define TORCH_VERSION_MINOR 11
#define TORCH_VERSION_PATCH 2
#define TORCH_VERSION "2.11.2"
