// A training program for the verification tests, run by ddpguard-verify
// under torchrun: DDP configurations the verifier must accept (no false
// alarms) and divergences it must catch.
//
//   ddpguard_verify_program MODE [STEPS]
//
// Accepted: plain, no_sync (gradient accumulation), eval (a no_grad forward
// between steps), find_unused (a branch unused on odd steps), static_graph,
// bucket_view (gradient_as_bucket_view), broadcast_off.
// Caught: init_unsynced (init_sync(false), different weights per rank: before
// the first step), grad_divergence (rank 1 changes a gradient after the
// allreduce, in step 1), buffer_after_step (broadcast off: rank 1's buffer
// diverges, which is measured, not an error).
#include <ddpguard/runtime/DistributedDataParallel.h>

#include <torch/csrc/autograd/engine.h>
#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

struct NetImpl : torch::nn::Module {
  NetImpl()
      : fc1(register_module("fc1", torch::nn::Linear(6, 12))),
        bn(register_module("bn", torch::nn::BatchNorm1d(12))),
        fc2(register_module("fc2", torch::nn::Linear(12, 3))),
        side(register_module("side", torch::nn::Linear(6, 3))) {}
  torch::Tensor forward(torch::Tensor x, bool use_side = true) {
    auto y = fc2(torch::relu(bn(fc1(x))));
    return use_side ? y + side(x) : y;
  }
  torch::nn::Linear fc1;
  torch::nn::BatchNorm1d bn;
  torch::nn::Linear fc2;
  torch::nn::Linear side;
};
TORCH_MODULE(Net);

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODE [STEPS]\n", argv[0]);
    return 2;
  }
  const std::string mode = argv[1];
  const int steps = argc > 2 ? std::atoi(argv[2]) : 4;
  torch::set_num_threads(1);
  auto pg = ddpguard::init_process_group_from_env("gloo");
  const int rank = pg->getRank();
  torch::manual_seed(rank); // different initial weights: construction syncs them

  ddpguard::DDPOptions options;
  if (mode == "find_unused")
    options.find_unused_parameters(true);
  if (mode == "static_graph")
    options.static_graph(true);
  if (mode == "bucket_view")
    options.gradient_as_bucket_view(true);
  if (mode == "broadcast_off" || mode == "buffer_after_step")
    options.broadcast_buffers(false);
  if (mode == "init_unsynced")
    options.init_sync(false);
  Net net;
  ddpguard::DistributedDataParallel<Net> ddp(net, pg, options);
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));

  for (int step = 0; step < steps; ++step) {
    torch::manual_seed(100 * step + rank);
    if (mode == "bucket_view") { // gradients are views: zero, never detach
      for (auto &p : net->parameters())
        if (p.grad().defined())
          p.mutable_grad().zero_();
    } else {
      opt.zero_grad();
    }
    if (mode == "no_sync") {
      auto guard = ddp.no_sync();
      for (int micro = 0; micro < 2; ++micro)
        ddp(torch::randn({8, 6})).pow(2).mean().backward();
    }
    auto x = torch::randn({8, 6});
    const bool use_side = !(mode == "find_unused" && step % 2 == 1);
    auto loss = ddp(x, use_side).pow(2).mean();
    if (mode == "grad_divergence" && step == 1 && rank == 1) {
      // After c10d::Reducer's allreduce: a callback queued from a callback
      // runs after those queued during the backward.
      loss.register_hook([&net](torch::Tensor g) {
        torch::autograd::Engine::get_default_engine().queue_callback([&net] {
          torch::autograd::Engine::get_default_engine().queue_callback([&net] {
            torch::NoGradGuard no_grad;
            net->fc2->bias.grad().add_(1e-6);
          });
        });
        return g;
      });
    }
    loss.backward();
    opt.step();
    if (mode == "eval") {
      torch::NoGradGuard no_grad;
      net->eval();
      ddp(torch::randn({4, 6}));
      net->train();
    }
    if (mode == "buffer_after_step" && rank == 1) {
      torch::NoGradGuard no_grad;
      net->bn->running_mean.add_(0.5);
    }
    if (rank == 0)
      std::printf("%s: step %d loss %.5f\n", mode.c_str(), step, loss.item<double>());
  }
  return 0;
}
