// The verification mode (DDPGUARD_VERIFY=1) of one DistributedDataParallel:
// DDPCore calls these hooks; see Verify.h and docs/verifier.md.
//
//   step k       = the k-th synchronised backward (0-based) and what follows
//   gradients    = hashed at the end of that backward (an autograd final
//                  callback queued after c10d::Reducer's finalisation)
//   parameters   = hashed at the next forward (after the optimizer step), or
//                  when the DDP is destroyed if no forward followed
//   buffers      = with them: identical if that forward broadcast them,
//                  otherwise their divergence from rank 0 is measured
// The hashes are compared when their exchange happens: at once, or batched
// over several steps (Verifier.cpp, "Batching").
#pragma once

#include <ddpguard/runtime/DistributedDataParallel.h>
#include <ddpguard/runtime/Verify.h>

#include <memory>

namespace ddpguard::detail {

class Verifier {
public:
  Verifier(torch::nn::Module &module, ProcessGroupPtr process_group,
           const DDPOptions &options);
  ~Verifier();
  Verifier(const Verifier &) = delete;
  Verifier &operator=(const Verifier &) = delete;

  // End of DDPCore::pre_forward; `broadcast`: this forward broadcast buffers.
  void on_forward(bool broadcast);
  // A grad-mode forward prepared the reducer: the next backward synchronises.
  void on_synced_forward();
  // An AccumulateGrad post-hook ran (any thread).
  void on_gradient();
  // From ~DDPCore: the last optimizer step's parameters, then the summary.
  // Never throws; a divergence found here ends the process with status 1.
  void finish() noexcept;

  struct State;

private:
  std::shared_ptr<State> state_;
};

} // namespace ddpguard::detail
