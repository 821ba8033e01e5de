// The built-in scenarios of `ddpguard-verify --scenario NAME`: five patterns
// of "several forwards before one backward" on a DDP-wrapped module with
// buffers, each as the original and as its three fixes, small enough for a
// CPU. Runs as one rank under torchrun, with verification on
// (DDPGUARD_VERIFY=1, set by ddpguard-verify).
//
//   ddpguard-verify-scenarios --list
//   ddpguard-verify-scenarios SCENARIO VARIANT|all [--steps N] [--device cpu|cuda]
//       [--backend gloo|nccl] [--plant-divergence RANK:STEP] [--crash RANK:STEP]
//
// SCENARIO: contrastive, gan, custom-buffer, gradient-penalty, recurrent.
// VARIANT:  original (the bug), broadcast_off, forward_group,
//           once_per_backward; `all` runs them one after another in this
//           process (one launch; scripts/gpu-check.sh uses it) and prints
//               VARIANT-RESULT <variant> <ok|hazard|diverged|error> <steps> <message>
// --plant-divergence R:S  rank R adds 1e-3 to one parameter after step S
//                         (the verifier must name R, S and the parameter)
// --crash R:S             rank R kills itself (SIGKILL) in step S, between
//                         forward and backward
// Exit status 0 when the variant trained, 1 otherwise.
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <ddpguard/runtime/Verify.h>

#include <torch/torch.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace {

using ddpguard::BufferBroadcast;
using ddpguard::DDPOptions;
template <typename M> using DDP = ddpguard::DistributedDataParallel<M>;

const std::vector<std::string> kScenarios = {"contrastive", "gan", "custom-buffer",
                                             "gradient-penalty", "recurrent"};
const std::vector<std::string> kVariants = {"original", "broadcast_off", "forward_group",
                                            "once_per_backward"};

struct Config {
  std::string scenario;
  std::string variant;
  int steps = 5;
  torch::Device device = torch::kCPU;
  ddpguard::ProcessGroupPtr pg;
  int rank = 0;
  int plant_rank = -1, plant_step = -1;
  int crash_rank = -1, crash_step = -1;
};

DDPOptions options_for(const Config &c) {
  DDPOptions options;
  if (c.variant == "broadcast_off")
    options.broadcast_buffers(false);
  if (c.variant == "once_per_backward")
    options.buffer_broadcast(BufferBroadcast::kOncePerBackward);
  return options;
}

bool fused(const Config &c) { return c.variant == "forward_group"; }

// Different data on every rank and step (the BatchNorm statistics differ,
// as they do in real training).
void seed_step(const Config &c, int step) { torch::manual_seed(1000 * step + 17 * c.rank + 5); }

void maybe_crash(const Config &c, int step) {
  if (c.rank == c.crash_rank && step == c.crash_step) {
    std::fprintf(stderr, "scenario: rank %d kills itself (SIGKILL) in step %d\n", c.rank, step);
    std::fflush(nullptr);
    std::raise(SIGKILL);
  }
}

// After the optimizer step: the planted divergence, then a progress line.
void end_step(const Config &c, int step, torch::nn::Module &module, double loss) {
  if (c.rank == c.plant_rank && step == c.plant_step) {
    torch::NoGradGuard no_grad;
    auto named = module.named_parameters(/*recurse=*/true);
    const auto &first = named[0];
    first.value().view({-1})[0].add_(1e-3);
    std::fprintf(stderr, "scenario: rank %d adds 1e-3 to '%s' after step %d\n", c.rank,
                 first.key().c_str(), step);
  }
  if (c.rank == 0)
    std::printf("%s/%s: step %d loss %.5f\n", c.scenario.c_str(), c.variant.c_str(), step, loss);
  std::fflush(stdout);
}

// ---------------------------------------------------------------------------
// contrastive: a small ResNet-style BatchNorm conv net, two augmented views.

struct BlockImpl : torch::nn::Module {
  explicit BlockImpl(int64_t ch)
      : conv1(register_module("conv1", torch::nn::Conv2d(torch::nn::Conv2dOptions(ch, ch, 3).padding(1).bias(false)))),
        bn1(register_module("bn1", torch::nn::BatchNorm2d(ch))),
        conv2(register_module("conv2", torch::nn::Conv2d(torch::nn::Conv2dOptions(ch, ch, 3).padding(1).bias(false)))),
        bn2(register_module("bn2", torch::nn::BatchNorm2d(ch))) {}
  torch::Tensor forward(torch::Tensor x) {
    return torch::relu(bn2(conv2(torch::relu(bn1(conv1(x))))) + x);
  }
  torch::nn::Conv2d conv1;
  torch::nn::BatchNorm2d bn1;
  torch::nn::Conv2d conv2;
  torch::nn::BatchNorm2d bn2;
};
TORCH_MODULE(Block);

struct ResNetImpl : torch::nn::Module {
  ResNetImpl()
      : stem(register_module("stem", torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 8, 3).padding(1).bias(false)))),
        bn(register_module("bn", torch::nn::BatchNorm2d(8))),
        block(register_module("block", Block(8))),
        head(register_module("head", torch::nn::Linear(8, 16))) {}
  torch::Tensor forward(torch::Tensor x) {
    x = block(torch::relu(bn(stem(x))));
    return head(torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1));
  }
  torch::nn::Conv2d stem;
  torch::nn::BatchNorm2d bn;
  Block block;
  torch::nn::Linear head;
};
TORCH_MODULE(ResNet);

torch::Tensor nt_xent(const torch::Tensor &z1, const torch::Tensor &z2) {
  auto logits = torch::matmul(torch::nn::functional::normalize(z1),
                              torch::nn::functional::normalize(z2).t());
  auto targets = torch::arange(z1.size(0), torch::TensorOptions().dtype(torch::kLong).device(z1.device()));
  return torch::nn::functional::cross_entropy(logits / 0.1, targets);
}

int contrastive(Config &c) {
  torch::manual_seed(c.rank); // construction must make the weights equal
  ResNet net;
  net->to(c.device);
  DDP<ResNet> ddp(net, c.pg, options_for(c));
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  int step = 0;
  for (; step < c.steps; ++step) {
    seed_step(c, step);
    auto batch = torch::randn({8, 3, 8, 8}, c.device);
    auto v1 = batch + 0.1 * torch::randn_like(batch), v2 = batch + 0.1 * torch::randn_like(batch);
    opt.zero_grad();
    torch::Tensor z1, z2;
    if (fused(c)) {
      std::tie(z1, z2) = ddp.forward_group(v1, v2);
    } else {
      z1 = ddp(v1);
      z2 = ddp(v2);
    }
    auto loss = nt_xent(z1, z2);
    maybe_crash(c, step);
    loss.backward();
    opt.step();
    end_step(c, step, *net, loss.item<double>());
  }
  return step;
}

// ---------------------------------------------------------------------------
// gan: the discriminator on fake, then real, one backward.

struct GeneratorImpl : torch::nn::Module {
  GeneratorImpl()
      : fc1(register_module("fc1", torch::nn::Linear(4, 16))),
        bn(register_module("bn", torch::nn::BatchNorm1d(16))),
        fc2(register_module("fc2", torch::nn::Linear(16, 8))) {}
  torch::Tensor forward(torch::Tensor z) { return fc2(torch::relu(bn(fc1(z)))); }
  torch::nn::Linear fc1;
  torch::nn::BatchNorm1d bn;
  torch::nn::Linear fc2;
};
TORCH_MODULE(Generator);

struct CriticImpl : torch::nn::Module {
  CriticImpl()
      : fc1(register_module("fc1", torch::nn::Linear(8, 16))),
        bn(register_module("bn", torch::nn::BatchNorm1d(16))),
        fc2(register_module("fc2", torch::nn::Linear(16, 1))) {}
  torch::Tensor forward(torch::Tensor x) {
    return fc2(torch::leaky_relu(bn(fc1(x)), 0.2));
  }
  torch::nn::Linear fc1;
  torch::nn::BatchNorm1d bn;
  torch::nn::Linear fc2;
};
TORCH_MODULE(Critic);

int gan(Config &c) {
  torch::manual_seed(c.rank);
  Generator g;
  Critic d;
  g->to(c.device);
  d->to(c.device);
  ddpguard::set_verify_label(c.scenario + "/" + c.variant + "/G");
  DDP<Generator> G(g, c.pg);
  ddpguard::set_verify_label(c.scenario + "/" + c.variant + "/D");
  DDP<Critic> D(d, c.pg, options_for(c));
  ddpguard::set_verify_label("");
  torch::optim::Adam opt_g(g->parameters(), torch::optim::AdamOptions(1e-3));
  torch::optim::Adam opt_d(d->parameters(), torch::optim::AdamOptions(1e-3));
  auto bce = [](const torch::Tensor &logits, double target) {
    return torch::binary_cross_entropy_with_logits(logits, torch::full_like(logits, target));
  };
  int step = 0;
  for (; step < c.steps; ++step) {
    seed_step(c, step);
    auto real = torch::randn({16, 8}, c.device) + 1.0;
    auto z = torch::randn({16, 4}, c.device);
    // Discriminator: fake, then real, one backward.
    torch::Tensor fake;
    {
      torch::NoGradGuard no_grad;
      fake = G(z);
    }
    opt_d.zero_grad();
    torch::Tensor d_fake, d_real;
    if (fused(c)) {
      std::tie(d_fake, d_real) = D.forward_group(fake, real);
    } else {
      d_fake = D(fake);
      d_real = D(real);
    }
    auto d_loss = bce(d_real, 1.0) + bce(d_fake, 0.0);
    maybe_crash(c, step);
    d_loss.backward();
    opt_d.step();
    // Generator: one forward of each.
    opt_g.zero_grad();
    auto g_loss = bce(D(G(z)), 1.0);
    g_loss.backward();
    opt_g.step();
    end_step(c, step, *d, d_loss.item<double>());
  }
  return step;
}

// ---------------------------------------------------------------------------
// custom-buffer: a registered buffer saved for backward by `l(x) * scale`.

struct ScaledImpl : torch::nn::Module {
  explicit ScaledImpl(int rank)
      : l(register_module("l", torch::nn::Linear(8, 16))),
        out(register_module("out", torch::nn::Linear(16, 4))) {
    // Different on every rank until the construction broadcast.
    scale = register_buffer("scale", torch::linspace(0.5, 1.5, 16) + 0.01 * rank);
  }
  torch::Tensor forward(torch::Tensor x) { return out(torch::relu(l(x) * scale)); }
  torch::nn::Linear l;
  torch::nn::Linear out;
  torch::Tensor scale;
};
TORCH_MODULE(Scaled);

int custom_buffer(Config &c) {
  torch::manual_seed(c.rank);
  Scaled net(c.rank);
  net->to(c.device);
  DDP<Scaled> ddp(net, c.pg, options_for(c));
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.05));
  int step = 0;
  for (; step < c.steps; ++step) {
    seed_step(c, step);
    auto x1 = torch::randn({8, 8}, c.device), x2 = torch::randn({8, 8}, c.device);
    opt.zero_grad();
    torch::Tensor y1, y2;
    if (fused(c)) {
      std::tie(y1, y2) = ddp.forward_group(x1, x2);
    } else {
      y1 = ddp(x1);
      y2 = ddp(x2);
    }
    auto loss = (y1 - y2).pow(2).mean() + 0.1 * y1.mean();
    maybe_crash(c, step);
    loss.backward();
    opt.step();
    end_step(c, step, *net, loss.item<double>());
  }
  return step;
}

// ---------------------------------------------------------------------------
// gradient-penalty: WGAN-GP's critic, torch::autograd::grad with create_graph.

int gradient_penalty(Config &c) {
  torch::manual_seed(c.rank);
  Critic d;
  d->to(c.device);
  DDP<Critic> D(d, c.pg, options_for(c));
  torch::optim::Adam opt(d->parameters(), torch::optim::AdamOptions(1e-3));
  int step = 0;
  for (; step < c.steps; ++step) {
    seed_step(c, step);
    auto real = torch::randn({16, 8}, c.device) + 1.0;
    auto fake = torch::randn({16, 8}, c.device);
    auto eps = torch::rand({16, 1}, c.device);
    auto x_hat = (eps * real + (1 - eps) * fake).detach().requires_grad_(true);
    opt.zero_grad();
    torch::Tensor d_real, d_fake, d_hat;
    if (fused(c)) {
      std::tie(d_real, d_fake, d_hat) = D.forward_group(real, fake, x_hat);
    } else {
      d_real = D(real);
      d_fake = D(fake);
      d_hat = D(x_hat);
    }
    auto grad = torch::autograd::grad({d_hat.sum()}, {x_hat}, {}, /*retain_graph=*/true,
                                      /*create_graph=*/true)[0];
    auto penalty = (grad.norm(2, 1) - 1).pow(2).mean();
    auto loss = d_fake.mean() - d_real.mean() + 10 * penalty;
    maybe_crash(c, step);
    loss.backward();
    opt.step();
    end_step(c, step, *d, loss.item<double>());
  }
  return step;
}

// ---------------------------------------------------------------------------
// recurrent: a BatchNorm cell called once per time step. forward_group cannot
// express a recurrence (each input is the previous output), so its fix is the
// other fusion: one DDP forward over the unrolled sequence.

constexpr int64_t kTimeSteps = 3, kIn = 4, kHidden = 8;

struct CellImpl : torch::nn::Module {
  CellImpl()
      : fc(register_module("fc", torch::nn::Linear(kIn + kHidden, kHidden))),
        bn(register_module("bn", torch::nn::BatchNorm1d(kHidden))) {}
  torch::Tensor forward(torch::Tensor x, torch::Tensor h) {
    return torch::tanh(bn(fc(torch::cat({x, h}, 1))));
  }
  torch::nn::Linear fc;
  torch::nn::BatchNorm1d bn;
};
TORCH_MODULE(Cell);

struct UnrolledImpl : torch::nn::Module {
  UnrolledImpl() : cell(register_module("cell", Cell())) {}
  torch::Tensor forward(torch::Tensor xs) {
    auto h = torch::zeros({xs.size(1), kHidden}, xs.options());
    for (int64_t t = 0; t < xs.size(0); ++t)
      h = cell(xs[t], h);
    return h;
  }
  Cell cell;
};
TORCH_MODULE(Unrolled);

int recurrent(Config &c) {
  torch::manual_seed(c.rank);
  Unrolled net; // the fused variant wraps it; the others its cell
  net->to(c.device);
  std::unique_ptr<DDP<Cell>> per_step;
  std::unique_ptr<DDP<Unrolled>> whole;
  if (fused(c))
    whole = std::make_unique<DDP<Unrolled>>(net, c.pg, options_for(c));
  else
    per_step = std::make_unique<DDP<Cell>>(net->cell, c.pg, options_for(c));
  torch::optim::SGD opt(net->parameters(), torch::optim::SGDOptions(0.05));
  int step = 0;
  for (; step < c.steps; ++step) {
    seed_step(c, step);
    auto xs = torch::randn({kTimeSteps, 8, kIn}, c.device);
    opt.zero_grad();
    torch::Tensor h;
    if (whole) {
      h = (*whole)(xs);
    } else {
      h = torch::zeros({8, kHidden}, c.device);
      for (int64_t t = 0; t < kTimeSteps; ++t)
        h = (*per_step)(xs[t], h);
    }
    auto loss = h.pow(2).mean() + 0.1 * h.mean();
    maybe_crash(c, step);
    loss.backward();
    opt.step();
    end_step(c, step, *net, loss.item<double>());
  }
  return step;
}

const std::map<std::string, std::function<int(Config &)>> kRunners = {
    {"contrastive", contrastive},
    {"gan", gan},
    {"custom-buffer", custom_buffer},
    {"gradient-penalty", gradient_penalty},
    {"recurrent", recurrent}};

const char *describe(const std::string &scenario) {
  if (scenario == "contrastive")
    return "ResNet-style BatchNorm conv net, two views, one backward";
  if (scenario == "gan")
    return "discriminator on fake then real, one backward";
  if (scenario == "custom-buffer")
    return "a registered buffer saved by l(x) * scale, two forwards";
  if (scenario == "gradient-penalty")
    return "WGAN-GP critic: three forwards, autograd::grad(create_graph), one backward";
  return "BatchNorm cell called per time step, one backward";
}

const char *describe_variant(const std::string &scenario, const std::string &variant) {
  if (variant == "original")
    return "the bug: several forwards, one backward, broadcast_buffers(true)";
  if (variant == "broadcast_off")
    return "DDPOptions().broadcast_buffers(false)";
  if (variant == "once_per_backward")
    return "DDPOptions().buffer_broadcast(BufferBroadcast::kOncePerBackward)";
  if (scenario == "recurrent")
    return "one DDP forward over the unrolled sequence (forward_group cannot take a recurrence)";
  return "ddp.forward_group(...): one DDP forward for all inputs";
}

// Runs one variant; returns what VARIANT-RESULT says about it.
struct Outcome {
  std::string result; // ok | hazard | diverged | error
  int steps = 0;
  std::string message;
};

Outcome run_variant(Config &c) {
  Outcome o;
  try {
    o.steps = kRunners.at(c.scenario)(c);
    o.result = "ok";
  } catch (const ddpguard::VerificationError &e) {
    o.result = "diverged";
    o.message = e.what();
  } catch (const ddpguard::HazardError &e) {
    o.result = "hazard";
    o.message = e.what();
  } catch (const c10::Error &e) {
    o.result = "error";
    o.message = e.what_without_backtrace();
  } catch (const std::exception &e) {
    o.result = "error";
    o.message = e.what();
  }
  return o;
}

std::pair<int, int> rank_step(const char *text) {
  int r = -1, s = -1;
  if (std::sscanf(text, "%d:%d", &r, &s) != 2) {
    std::fprintf(stderr, "scenario: expected RANK:STEP, got '%s'\n", text);
    std::exit(2);
  }
  return {r, s};
}

int usage() {
  std::fprintf(stderr,
               "usage: ddpguard-verify-scenarios --list\n"
               "       ddpguard-verify-scenarios SCENARIO VARIANT|all [--steps N] "
               "[--device cpu|cuda] [--backend gloo|nccl]\n"
               "           [--plant-divergence RANK:STEP] [--crash RANK:STEP]\n");
  return 2;
}

} // namespace

int main(int argc, char **argv) {
  if (argc == 2 && std::string(argv[1]) == "--list") {
    for (const auto &s : kScenarios)
      for (const auto &v : kVariants)
        std::printf("%s\t%s\t%s\t%s\t%s\n", s.c_str(), v.c_str(),
                    v == "original" ? "hazard" : "ok", describe(s),
                    describe_variant(s, v));
    return 0;
  }
  if (argc < 3)
    return usage();
  Config c;
  c.scenario = argv[1];
  c.variant = argv[2];
  std::string backend = "gloo", device = "cpu";
  for (int i = 3; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc)
      return usage();
    const char *value = argv[++i];
    if (a == "--steps")
      c.steps = std::atoi(value);
    else if (a == "--device")
      device = value;
    else if (a == "--backend")
      backend = value;
    else if (a == "--plant-divergence")
      std::tie(c.plant_rank, c.plant_step) = rank_step(value);
    else if (a == "--crash")
      std::tie(c.crash_rank, c.crash_step) = rank_step(value);
    else
      return usage();
  }
  if (!kRunners.count(c.scenario)) {
    std::fprintf(stderr, "scenario: unknown scenario '%s'\n", c.scenario.c_str());
    return usage();
  }
  if (c.variant != "all" &&
      std::find(kVariants.begin(), kVariants.end(), c.variant) == kVariants.end()) {
    std::fprintf(stderr, "scenario: unknown variant '%s'\n", c.variant.c_str());
    return usage();
  }
  torch::set_num_threads(1);
  c.pg = ddpguard::init_process_group_from_env(backend);
  c.rank = c.pg->getRank();
  if (device == "cuda") {
    const char *local = std::getenv("LOCAL_RANK");
    const int count = static_cast<int>(torch::cuda::device_count());
    if (count == 0) {
      std::fprintf(stderr, "scenario: --device cuda but no CUDA device\n");
      return 2;
    }
    c.device = torch::Device(torch::kCUDA, (local ? std::atoi(local) : 0) % count);
  } else if (device != "cpu") {
    return usage();
  }

  if (c.variant != "all") {
    ddpguard::set_verify_label(c.scenario + "/" + c.variant);
    const Outcome o = run_variant(c);
    if (o.result == "ok")
      return 0;
    // The verifier's summary already holds the divergence or the hazard.
    std::fprintf(stderr, "scenario %s/%s failed (%s): %s\n", c.scenario.c_str(),
                 c.variant.c_str(), o.result.c_str(), o.message.c_str());
    std::fflush(nullptr);
    return 1;
  }
  int status = 0;
  for (const auto &v : kVariants) {
    c.variant = v;
    ddpguard::set_verify_label(c.scenario + "/" + v);
    const Outcome o = run_variant(c);
    std::string first_line = o.message.substr(0, o.message.find('\n'));
    std::printf("VARIANT-RESULT %s %s %d %s\n", v.c_str(), o.result.c_str(), o.steps,
                first_line.c_str());
    std::fflush(stdout);
    if ((v == "original") != (o.result == "hazard"))
      status = 1;
  }
  return status;
}
