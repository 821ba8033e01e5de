// The in-place error explainer names the write behind autograd's in-place
// error in programs with no ddpguard DDP: an optimizer step on a plain
// module, a parameter clamp_ under NoGradGuard, an in-place op on an
// activation. Each program runs with the explainer silent, whose outcome is
// the oracle, then with it: it reports iff autograd fails with its in-place
// error, before the error, and the error is autograd's own. Where a DDP's
// hazard detector has reported a backward, the explainer adds nothing.
#include "TestSupport.h"

#include <functional>
#include <optional>

using namespace ddpguard;
using namespace ddpguard::test;

namespace {

torch::Tensor mse(const torch::Tensor &out, double target) {
  return (out - target).pow(2).mean();
}

torch::nn::Sequential mlp(int64_t in, int64_t hidden, int64_t out) {
  return torch::nn::Sequential(torch::nn::Linear(in, hidden), torch::nn::Tanh(),
                               torch::nn::Linear(hidden, out));
}

// pytorch/pytorch#39141's shape on plain modules: D's Adam step between the
// backward of D's loss and G's backward through the same D forward.
void plain_gan(bool step_before_g_backward) {
  auto g = mlp(4, 16, 8), d = mlp(8, 16, 1);
  torch::optim::Adam opt_d(d->parameters(), torch::optim::AdamOptions(1e-3));
  torch::optim::Adam opt_g(g->parameters(), torch::optim::AdamOptions(1e-3));
  auto z = torch::randn({6, 4}), real = torch::randn({6, 8});
  for (int step = 0; step < 2; ++step) {
    auto d_fake = d->forward(g->forward(z));
    auto loss_d = mse(d->forward(real), 1.0) + mse(d_fake, 0.0);
    opt_d.zero_grad();
    loss_d.backward({}, /*retain_graph=*/true);
    if (step_before_g_backward)
      opt_d.step();
    opt_g.zero_grad();
    mse(d_fake, 1.0).backward();
    opt_g.step();
    if (!step_before_g_backward)
      opt_d.step();
  }
}

struct Program {
  std::string name;
  std::function<void()> body;
  std::vector<std::string> named; // what the report must say
};

const std::vector<Program> &programs() {
  static const std::vector<Program> all = {
      {"plain_gan_step_before_g_backward",
       [] { plain_gan(true); },
       {"a parameter [1, 16]",
        "saved by AddmmBackward0 at version 1, now at version 2",
        "an optimizer step", "enters the graph at MeanBackward0"}},
      {"plain_gan_step_after_g_backward", [] { plain_gan(false); }, {}},
      // WGAN's weight clipping between the critic's forward and its backward.
      {"clamp_critic_before_backward",
       [] {
         auto critic = mlp(4, 8, 1);
         auto x = torch::randn({6, 4});
         auto out = critic->forward(x);
         {
           torch::NoGradGuard no_grad;
           for (auto &p : critic->parameters())
             p.clamp_(-0.01, 0.01);
         }
         mse(out, 0.0).backward();
       },
       {"a parameter [1, 8]", "under NoGradGuard"}},
      {"clamp_critic_after_backward",
       [] {
         auto critic = mlp(4, 8, 1);
         mse(critic->forward(torch::randn({6, 4})), 0.0).backward();
         torch::NoGradGuard no_grad;
         for (auto &p : critic->parameters())
           p.clamp_(-0.01, 0.01);
       },
       {}},
      // sigmoid saves its output; mul_ writes it.
      {"sigmoid_output_mul_inplace",
       [] {
         torch::nn::Linear fc(4, 8);
         auto gate = torch::sigmoid(fc(torch::randn({6, 4})));
         gate.mul_(2);
         mse(gate, 0.0).backward();
       },
       {"not a parameter of this graph", "[6, 8]", "saved by SigmoidBackward0",
        "an in-place op on that tensor"}},
      {"sigmoid_output_mul_out_of_place",
       [] {
         torch::nn::Linear fc(4, 8);
         auto gate = torch::sigmoid(fc(torch::randn({6, 4})));
         gate = gate.mul(2);
         mse(gate, 0.0).backward();
       },
       {}},
      // relu saves its output; an indexed assignment writes a view of it.
      {"relu_hidden_index_assign",
       [] {
         auto h = torch::relu(torch::nn::Linear(4, 8)(torch::randn({6, 4})));
         auto y = h * 3;
         h.select(0, 0).fill_(0);
         mse(y, 0.0).backward();
       },
       {"saved by ReluBackward0", "an in-place op on that tensor"}},
  };
  return all;
}

struct Outcome {
  std::string error; // empty: the program ran
  std::string stderr_text;
};

Outcome run(const Program &p, bool explained) {
  std::optional<WithoutExplainer> oracle;
  if (!explained)
    oracle.emplace();
  torch::manual_seed(11);
  Outcome o;
  ::testing::internal::CaptureStderr();
  try {
    p.body();
  } catch (const std::exception &e) {
    o.error = error_text(e);
  }
  o.stderr_text = ::testing::internal::GetCapturedStderr();
  return o;
}

size_t reports(const std::string &text) {
  size_t n = 0;
  for (size_t at = text.find("hazard on rank"); at != std::string::npos;
       at = text.find("hazard on rank", at + 1))
    ++n;
  return n;
}

} // namespace

TEST(Explainer, NamesTheWriteIffAutogradFails) {
  explain_inplace_errors(launch_env().rank);
  int failing = 0, training = 0;
  for (const auto &p : programs()) {
    SCOPED_TRACE(p.name);
    const Outcome off = run(p, /*explained=*/false);
    const bool fails = is_inplace_error(off.error);
    EXPECT_TRUE(off.error.empty() || fails)
        << "unexpected error: " << off.error;
    EXPECT_EQ(reports(off.stderr_text), 0u) << off.stderr_text;
    (fails ? failing : training)++;

    const Outcome on = run(p, /*explained=*/true);
    if (std::getenv("DDPGUARD_SHOW_REPORTS") && reports(on.stderr_text))
      std::printf("%s:\n%s\n", p.name.c_str(), on.stderr_text.c_str());
    // The error is autograd's own, unchanged.
    EXPECT_EQ(on.error, off.error);
    EXPECT_EQ(reports(on.stderr_text), fails ? 1u : 0u) << on.stderr_text;
    if (fails)
      EXPECT_NE(on.stderr_text.find("in-place write hazard on rank " +
                                    std::to_string(launch_env().rank) + ": "),
                std::string::npos)
          << on.stderr_text;
    for (const auto &needle : p.named)
      EXPECT_NE(on.stderr_text.find(needle), std::string::npos)
          << needle << "\n"
          << on.stderr_text;
    EXPECT_TRUE(fails || p.named.empty())
        << "a program expected to be reported trains";
  }
  // Both outcomes occur, so the comparison above can fail either way.
  EXPECT_GT(failing, 0);
  EXPECT_GT(training, 0);
}

// A DDP whose detector reported the backward: the explainer stays silent, so
// the program prints one report, the detector's, which names the path.
TEST(Explainer, AddsNothingToTheDetectorsReport) {
  explain_inplace_errors(launch_env().rank);
  auto net = mlp(4, 8, 1);
  DistributedDataParallel<torch::nn::Sequential> ddp(net, test_group());
  torch::optim::Adam opt(net->parameters(), torch::optim::AdamOptions(1e-3));
  ::testing::internal::CaptureStderr();
  std::string error;
  try {
    auto out = ddp(torch::randn({6, 4}));
    opt.zero_grad();
    mse(out, 0.0).backward({}, /*retain_graph=*/true);
    opt.step();
    mse(out, 1.0).backward();
  } catch (const std::exception &e) {
    error = error_text(e);
  }
  const std::string text = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(is_inplace_error(error)) << error;
  EXPECT_EQ(reports(text), 1u) << text;
  EXPECT_NE(text.find("2.weight (parameter)"), std::string::npos) << text;
}
