// The one place where LibTorch 1.13 (Debian, CPU + Gloo) and LibTorch 2.x (the
// CUDA wheel, NCCL) differ for us: in 2.x a Gloo/NCCL process group is a
// c10d::Backend that must be wrapped in a c10d::ProcessGroup.
#pragma once

#include <ddpguard/runtime/ProcessGroup.h>

#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/version.h>
#ifdef DDPGUARD_WITH_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <chrono>
#include <memory>

namespace ddpguard::compat {

inline ProcessGroupPtr
make_gloo(const c10::intrusive_ptr<c10d::Store> &store, int rank, int size,
          std::chrono::milliseconds timeout,
          std::shared_ptr<::gloo::transport::Device> device) {
  auto options = c10d::ProcessGroupGloo::Options::create(timeout);
  options->devices.push_back(std::move(device));
#if TORCH_VERSION_MAJOR >= 2
  auto backend =
      c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, options);
  auto pg = c10::make_intrusive<c10d::ProcessGroup>(
      store, rank, size,
      c10::make_intrusive<c10d::ProcessGroup::Options>("gloo", timeout));
  pg->setBackend(c10::DeviceType::CPU, c10d::ProcessGroup::BackendType::GLOO,
                 backend);
  return pg;
#else
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, options);
#endif
}

#ifdef DDPGUARD_WITH_NCCL
inline ProcessGroupPtr make_nccl(const c10::intrusive_ptr<c10d::Store> &store,
                                 int rank, int size,
                                 std::chrono::milliseconds timeout) {
  auto options = c10d::ProcessGroupNCCL::Options::create();
  options->timeout = timeout;
#if TORCH_VERSION_MAJOR >= 2
  auto backend =
      c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, size, options);
  auto pg = c10::make_intrusive<c10d::ProcessGroup>(
      store, rank, size,
      c10::make_intrusive<c10d::ProcessGroup::Options>("nccl", timeout));
  pg->setBackend(c10::DeviceType::CUDA, c10d::ProcessGroup::BackendType::NCCL,
                 backend);
  return pg;
#else
  return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, size, options);
#endif
}
#endif

} // namespace ddpguard::compat
