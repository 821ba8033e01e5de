// The detector names any in-place write that fails a backward through a DDP
// forward's graph, not only DDP's buffer broadcast: an optimizer step between
// a forward and a backward through it (the GAN shape), a parameter clamp_ or
// a buffer write under NoGradGuard. As in detector_exactness_tests.cpp, each
// program runs with the detector off (kSilent), whose outcome is the oracle,
// then warning and throwing on the same weights and data: it reports iff
// autograd fails with its in-place error. No program carries an expected
// outcome; the needles below only check what a report names.
#include "TestSupport.h"

#include <cstdlib>
#include <functional>
#include <optional>

using namespace ddpguard;
using namespace ddpguard::test;

namespace {

// fc2(sigmoid(fc1(x))), optionally times a buffer; or sigmoid(fc1(x)),
// whose output SigmoidBackward0 saves.
struct MlpImpl : torch::nn::Module {
  MlpImpl(int64_t in, int64_t hidden, int64_t out, bool with_scale = false,
          bool sigmoid_out = false)
      : fc1(register_module("fc1", torch::nn::Linear(in, hidden))),
        fc2(register_module("fc2", torch::nn::Linear(hidden, out))),
        sigmoid_out(sigmoid_out) {
    if (with_scale)
      scale = register_buffer("scale", torch::full({hidden}, 1.5));
  }
  torch::Tensor forward(torch::Tensor x) {
    auto h = torch::sigmoid(fc1(x));
    if (sigmoid_out)
      return h;
    return fc2(scale.defined() ? h * scale : h);
  }
  torch::nn::Linear fc1, fc2;
  torch::Tensor scale;
  bool sigmoid_out;
};
TORCH_MODULE(Mlp);
using DDP = DistributedDataParallel<Mlp>;

torch::Tensor mse(const torch::Tensor &out, double target) {
  return (out - target).pow(2).mean();
}

// The line of the forward whose graph the failing backward traverses.
int forward_line = 0;

struct Program {
  std::string name;
  std::function<void(HazardAction)> body;
  // What a report must name, and must not.
  std::vector<std::string> named, not_named;
};

// D's step between the backward of D's loss and G's backward through the
// same D forward (pytorch/pytorch#39141's shape).
void gan(HazardAction action, bool step_before_g_backward, bool adam) {
  Mlp g_net(4, 16, 8), d_net(8, 16, 1);
  DDP g(g_net, test_group(), DDPOptions().hazard_detector(action));
  DDP d(d_net, test_group(), DDPOptions().hazard_detector(action));
  std::unique_ptr<torch::optim::Optimizer> opt_d;
  if (adam)
    opt_d = std::make_unique<torch::optim::Adam>(d_net->parameters(),
                                                 torch::optim::AdamOptions(1e-3));
  else
    opt_d = std::make_unique<torch::optim::SGD>(d_net->parameters(),
                                                torch::optim::SGDOptions(1e-2));
  torch::optim::Adam opt_g(g_net->parameters(), torch::optim::AdamOptions(1e-3));
  auto z = torch::randn({6, 4}), real = torch::randn({6, 8});
  for (int step = 0; step < 2; ++step) {
    auto fake = g(z);
    auto d_real = d(real);
    forward_line = __LINE__ + 1;
    auto d_fake = d(fake);
    auto loss_d = mse(d_real, 1.0) + mse(d_fake, 0.0);
    opt_d->zero_grad();
    loss_d.backward({}, /*retain_graph=*/true);
    if (step_before_g_backward)
      opt_d->step();
    opt_g.zero_grad();
    mse(d_fake, 1.0).backward();
    opt_g.step();
    if (!step_before_g_backward)
      opt_d->step();
  }
}

const std::vector<Program> &programs() {
  static const std::vector<Program> all = {
      {"gan_adam_step_before_g_backward",
       [](HazardAction a) { gan(a, /*step_before_g_backward=*/true, /*adam=*/true); },
       {"in-place write hazard on rank",
        "fc2.weight (parameter): saved by AddmmBackward0 at version ",
        "fc1.weight (parameter): saved by AddmmBackward0 at version ",
        "traverses the graph of the forward at ",
        "so autograd rejects it at AddmmBackward0"},
       {"fc1.bias", "fc2.bias", "DistributedDataParallel hazard"}},
      // LibTorch's SGD writes through .data(), which bumps no version.
      {"gan_sgd_step_before_g_backward",
       [](HazardAction a) { gan(a, true, /*adam=*/false); }, {}, {}},
      {"gan_adam_step_after_g_backward",
       [](HazardAction a) { gan(a, /*step_before_g_backward=*/false, true); }, {}, {}},
      // WGAN's weight clipping between the forward and its backward. fc1's
      // input needs no gradient, so fc1 saved its input, not its weight.
      {"clamp_parameters_before_backward",
       [](HazardAction a) {
         Mlp net(4, 8, 3);
         DDP ddp(net, test_group(), DDPOptions().hazard_detector(a));
         forward_line = __LINE__ + 1;
         auto out = ddp(torch::randn({6, 4}));
         {
           torch::NoGradGuard no_grad;
           for (auto &p : net->parameters())
             p.clamp_(-0.2, 0.2);
         }
         mse(out, 0.0).backward();
       },
       {"fc2.weight (parameter): saved by AddmmBackward0 at version "},
       {"fc1.weight", "fc1.bias"}},
      // A buffer scaled in place after the forward that multiplied by it.
      {"buffer_write_before_backward",
       [](HazardAction a) {
         Mlp net(4, 8, 3, /*with_scale=*/true);
         DDP ddp(net, test_group(), DDPOptions().hazard_detector(a));
         forward_line = __LINE__ + 1;
         auto out = ddp(torch::randn({6, 4}));
         {
           torch::NoGradGuard no_grad;
           net->scale.mul_(0.5);
         }
         mse(out, 0.0).backward();
       },
       {"scale (buffer): saved by MulBackward0 at version "},
       {"fc1.weight"}},
      // The forward's output, which SigmoidBackward0 saved, written in place,
      // and a parameter written too (fc1's weight, not saved: its input needs
      // no gradient): the stale tensor is not the module's, and the report
      // quotes autograd's description of it.
      {"activation_and_parameter_write",
       [](HazardAction a) {
         Mlp net(4, 8, 3, /*with_scale=*/false, /*sigmoid_out=*/true);
         DDP ddp(net, test_group(), DDPOptions().hazard_detector(a));
         forward_line = __LINE__ + 1;
         auto out = ddp(torch::randn({6, 4}));
         {
           torch::NoGradGuard no_grad;
           net->fc1->weight.mul_(0.5);
         }
         out.mul_(2);
         mse(out, 0.0).backward();
       },
       {"a tensor that is not a parameter or buffer of the module (an "
        "activation or an input), saved by SigmoidBackward0: [",
        "is at version 1; expected version 0",
        "so autograd rejects it at SigmoidBackward0"},
       {"fc1.weight (parameter)"}},
      // The parameter written after its backward: the next forward saves the
      // new version.
      {"clean_steps_adam",
       [](HazardAction a) {
         Mlp net(4, 8, 3, /*with_scale=*/true);
         DDP ddp(net, test_group(), DDPOptions().hazard_detector(a));
         torch::optim::Adam opt(net->parameters(), torch::optim::AdamOptions(1e-3));
         for (int i = 0; i < 3; ++i) {
           opt.zero_grad();
           mse(ddp(torch::randn({6, 4})), 0.0).backward();
           opt.step();
         }
       },
       {}, {}},
      // A write between the forward and the backward of a tensor the graph
      // did not save: fc1's weight (its input needs no gradient).
      {"write_of_unsaved_parameter",
       [](HazardAction a) {
         Mlp net(4, 8, 3);
         DDP ddp(net, test_group(), DDPOptions().hazard_detector(a));
         auto out = ddp(torch::randn({6, 4}));
         {
           torch::NoGradGuard no_grad;
           net->fc1->weight.mul_(0.5);
           net->fc2->bias.add_(1.0);
         }
         mse(out, 0.0).backward();
       },
       {}, {}},
  };
  return all;
}

struct Outcome {
  std::string error; // empty: the program ran
  bool hazard_error = false;
  std::string stderr_text;
};

Outcome run(const Program &p, HazardAction action) {
  torch::manual_seed(7);
  std::optional<WithoutExplainer> oracle;
  if (action == HazardAction::kSilent)
    oracle.emplace();
  Outcome o;
  ::testing::internal::CaptureStderr();
  try {
    p.body(action);
  } catch (const HazardError &e) {
    o.hazard_error = true;
    o.error = e.what();
  } catch (const std::exception &e) {
    o.error = error_text(e);
  }
  o.stderr_text = ::testing::internal::GetCapturedStderr();
  return o;
}

bool reported(const Outcome &o) {
  return o.stderr_text.find("hazard on rank") != std::string::npos;
}

} // namespace

TEST(WriteDetector, NamesTheWriteIffAutogradFails) {
  int failing = 0, training = 0;
  for (const auto &p : programs()) {
    SCOPED_TRACE(p.name);
    const Outcome off = run(p, HazardAction::kSilent);
    const bool fails = is_inplace_error(off.error);
    EXPECT_TRUE(off.error.empty() || fails)
        << "unexpected error without the detector: " << off.error;
    EXPECT_FALSE(reported(off)) << off.stderr_text;
    (fails ? failing : training)++;

    const Outcome warn = run(p, HazardAction::kWarn);
    if (std::getenv("DDPGUARD_SHOW_REPORTS") && reported(warn))
      std::printf("%s:\n%s\n", p.name.c_str(), warn.stderr_text.c_str());
    EXPECT_EQ(warn.error, off.error);
    EXPECT_EQ(reported(warn), fails) << warn.stderr_text;
    if (fails) {
      // The report comes before autograd's error, naming the forward's line.
      EXPECT_NE(warn.stderr_text.find("write_detector_tests.cpp:" +
                                      std::to_string(forward_line) + " (in "),
                std::string::npos)
          << warn.stderr_text;
      for (const auto &needle : p.named)
        EXPECT_NE(warn.stderr_text.find(needle), std::string::npos)
            << needle << "\n" << warn.stderr_text;
      for (const auto &needle : p.not_named)
        EXPECT_EQ(warn.stderr_text.find(needle), std::string::npos)
            << needle << "\n" << warn.stderr_text;
    } else {
      EXPECT_TRUE(p.named.empty()) << "a program expected to be reported trains";
    }

    const Outcome thrown = run(p, HazardAction::kThrow);
    EXPECT_EQ(thrown.hazard_error, fails) << thrown.error;
    if (fails)
      EXPECT_NE(warn.stderr_text.find(thrown.error), std::string::npos)
          << "kThrow's report differs from kWarn's:\n" << thrown.error;
    else
      EXPECT_EQ(thrown.error, off.error);
  }
  // Both outcomes occur, so the comparison above can fail either way.
  EXPECT_EQ(failing, 4);
  EXPECT_EQ(training, 4);
}
