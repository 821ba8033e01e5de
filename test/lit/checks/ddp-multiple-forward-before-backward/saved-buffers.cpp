// Only a forward that saves a buffer for backward is a hazard: DDP's
// broadcast overwrites buffers, and the backward fails only if the earlier
// forward's graph saved one (docs/ground-truth.md, "Which buffers are saved
// for backward"; test/saved-buffers/confirm_table.py measures each case).
// RUN: %check_ddpguard %s %t -- %mock_flags
#include <nets.h>

template <typename Module>
void twoForwards(Module net, PG pg, torch::Tensor a, torch::Tensor b) {
  ddpguard::DistributedDataParallel<Module> d(net, pg);
  auto o1 = d(a);
  auto o2 = d(b);
  (o1 + o2).sum().backward();
}

// BatchNorm with running statistics saves them, in train and eval mode.
void batchNorm(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  ddpguard::DistributedDataParallel<Net> d(net, pg);
  // CHECK-FIXES: ddpguard::DistributedDataParallel<Net> d(net, pg, ddpguard::DDPOptions().broadcast_buffers(false));
  auto o1 = d(a);
  auto o2 = d(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd' before the backward of the forward at line [[@LINE-2]]
  (o1 + o2).sum().backward();
}

// Without running statistics a BatchNorm has no buffers.
struct NoStatsImpl : torch::nn::Module {
  NoStatsImpl()
      : fc(register_module("fc", torch::nn::Linear(4, 4))),
        bn(register_module("bn", torch::nn::BatchNorm1d(
                                     torch::nn::BatchNorm1dOptions(4)
                                         .track_running_stats(false)))) {}
  torch::Tensor forward(const torch::Tensor &x) { return bn(fc(x)); }
  torch::nn::Linear fc;
  torch::nn::BatchNorm1d bn;
};
TORCH_MODULE(NoStats);

void batchNormWithoutStats(NoStats net, PG pg, torch::Tensor a,
                           torch::Tensor b) {
  ddpguard::DistributedDataParallel<NoStats> d(net, pg);
  auto o1 = d(a);
  auto o2 = d(b);
  (o1 + o2).sum().backward();
}

// An options variable is followed too; `true` keeps the statistics.
struct TrackedImpl : torch::nn::Module {
  TrackedImpl() {
    auto options = torch::nn::BatchNorm1dOptions(4).track_running_stats(true);
    bn = register_module("bn", torch::nn::BatchNorm1d(options));
  }
  torch::Tensor forward(const torch::Tensor &x) { return bn(x); }
  torch::nn::BatchNorm1d bn{4};
};
TORCH_MODULE(Tracked);

void batchNormTracked(Tracked net, PG pg, torch::Tensor a, torch::Tensor b) {
  ddpguard::DistributedDataParallel<Tracked> d(net, pg);
  // CHECK-FIXES: ddpguard::DistributedDataParallel<Tracked> d(net, pg, ddpguard::DDPOptions().broadcast_buffers(false));
  auto o1 = d(a);
  auto o2 = d(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd'
  (o1 + o2).sum().backward();
}

// InstanceNorm normalises with copies of its running statistics.
struct StyleImpl : torch::nn::Module {
  StyleImpl()
      : norm(register_module("norm", torch::nn::InstanceNorm1d(
                                         torch::nn::InstanceNorm1dOptions(4)
                                             .track_running_stats(true)))) {}
  torch::Tensor forward(const torch::Tensor &x) { return norm(x); }
  torch::nn::InstanceNorm1d norm;
};
TORCH_MODULE(Style);

void instanceNormTracked(Style net, PG pg, torch::Tensor a, torch::Tensor b) {
  twoForwards(net, pg, a, b);
}

// LayerNorm has no buffers.
struct LayerNormedImpl : torch::nn::Module {
  LayerNormedImpl()
      : fc(register_module("fc", torch::nn::Linear(4, 4))),
        norm(register_module("norm", torch::nn::LayerNorm(std::vector<int64_t>{4}))) {}
  torch::Tensor forward(const torch::Tensor &x) { return norm(fc(x)); }
  torch::nn::Linear fc;
  torch::nn::LayerNorm norm;
};
TORCH_MODULE(LayerNormed);

void layerNorm(LayerNormed net, PG pg, torch::Tensor a, torch::Tensor b) {
  twoForwards(net, pg, a, b);
}

// A custom buffer: `l(x) * scale` saves scale for the gradient of l(x).
struct ScaledImpl : torch::nn::Module {
  ScaledImpl()
      : l(register_module("l", torch::nn::Linear(4, 4))),
        scale(register_buffer("scale", torch::zeros({4}))) {}
  torch::Tensor forward(const torch::Tensor &x) { return l(x) * scale; }
  torch::nn::Linear l;
  torch::Tensor scale;
};
TORCH_MODULE(Scaled);

void bufferTimesLayer(Scaled net, PG pg, torch::Tensor a, torch::Tensor b) {
  ddpguard::DistributedDataParallel<Scaled> d(net, pg);
  // CHECK-FIXES: ddpguard::DistributedDataParallel<Scaled> d(net, pg, ddpguard::DDPOptions().broadcast_buffers(false));
  auto o1 = d(a);
  auto o2 = d(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd'
  (o1 + o2).sum().backward();
}

// `l(x) + offset`: addition saves nothing.
struct ShiftedImpl : torch::nn::Module {
  ShiftedImpl() : l(register_module("l", torch::nn::Linear(4, 4))) {
    offset = register_buffer("offset", torch::zeros({4}));
  }
  torch::Tensor forward(const torch::Tensor &x) { return l(x) + offset; }
  torch::nn::Linear l;
  torch::Tensor offset;
};
TORCH_MODULE(Shifted);

void bufferPlusLayer(Shifted net, PG pg, torch::Tensor a, torch::Tensor b) {
  twoForwards(net, pg, a, b);
}

// `l(x * scale)`: the raw input needs no gradient, so no node saves scale.
struct InputScaledImpl : torch::nn::Module {
  InputScaledImpl()
      : l(register_module("l", torch::nn::Linear(4, 4))),
        scale(register_buffer("scale", torch::zeros({4}))) {}
  torch::Tensor forward(const torch::Tensor &x) { return l(x * scale); }
  torch::nn::Linear l;
  torch::Tensor scale;
};
TORCH_MODULE(InputScaled);

void bufferTimesInput(InputScaled net, PG pg, torch::Tensor a,
                      torch::Tensor b) {
  twoForwards(net, pg, a, b);
}

// Through a local, a view and a helper of the module: still saved.
struct HelperImpl : torch::nn::Module {
  HelperImpl()
      : l(register_module("l", torch::nn::Linear(4, 4))),
        scale(register_buffer("scale", torch::zeros({4}))) {}
  torch::Tensor weigh(const torch::Tensor &h, const torch::Tensor &w) {
    return h * w;
  }
  torch::Tensor forward(const torch::Tensor &x) {
    auto s = scale.t();
    return weigh(l(x), s);
  }
  torch::nn::Linear l;
  torch::Tensor scale;
};
TORCH_MODULE(Helper);

void bufferThroughHelper(Helper net, PG pg, torch::Tensor a, torch::Tensor b) {
  ddpguard::DistributedDataParallel<Helper> d(net, pg);
  // CHECK-FIXES: ddpguard::DistributedDataParallel<Helper> d(net, pg, ddpguard::DDPOptions().broadcast_buffers(false));
  auto o1 = d(a);
  auto o2 = d(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd'
  (o1 + o2).sum().backward();
}

// A buffer handed to a function whose body is not visible: assumed saved,
// and the finding says so.
torch::Tensor mystery(const torch::Tensor &h, const torch::Tensor &w);

struct OpaqueImpl : torch::nn::Module {
  OpaqueImpl()
      : l(register_module("l", torch::nn::Linear(4, 4))),
        scale(register_buffer("scale", torch::zeros({4}))) {}
  torch::Tensor forward(const torch::Tensor &x) { return mystery(l(x), scale); }
  torch::nn::Linear l;
  torch::Tensor scale;
};
TORCH_MODULE(Opaque);

void bufferIntoUnknownOp(Opaque net, PG pg, torch::Tensor a, torch::Tensor b) {
  ddpguard::DistributedDataParallel<Opaque> d(net, pg);
  // CHECK-FIXES: ddpguard::DistributedDataParallel<Opaque> d(net, pg, ddpguard::DDPOptions().broadcast_buffers(false));
  auto o1 = d(a);
  auto o2 = d(b);
  // CHECK-MESSAGES: :[[@LINE-1]]:13: warning: forward call on DDP-wrapped 'd'
  // CHECK-MESSAGES: :[[@LINE-12]]:58: note: assuming the forward saves a buffer for backward: buffer 'scale' is passed to 'mystery', whose body is not visible
  (o1 + o2).sum().backward();
}
