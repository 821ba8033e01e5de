// The detector's silent_writes mode (DDPOptions().silent_writes(true)) on the
// GAN shape: D's parameters written between the backward of D's loss and G's
// backward through the same D forward, by a write LibTorch's autograd sees
// (Adam's step) or does not (SGD's step and an in-place op on .data(), which
// have version counters of their own). Each case is labelled by running it:
// "raises" when autograd raises its in-place error; else "silent" when G's
// gradients differ from the reference, the same program with the write made
// after G's backward (so G's backward reads what D's forward saw); else
// "trains". No case carries an expected label; the counts below only show
// that every label occurs. With the mode on, a program raises the same error
// or trains to the same gradients bit for bit, and is reported as a silent
// write exactly when it is silent, naming what it wrote.
#include "TestSupport.h"

#include <optional>

using namespace ddpguard;
using namespace ddpguard::test;

namespace {

using DDP = DistributedDataParallel<Net>;

enum class Write { kSgdStep, kAdamStep, kDataAdd, kBiasDataAdd };

struct Case {
  std::string name;
  Write write;
  // What a silent report must name.
  std::vector<std::string> named;
};

torch::Tensor mse(const torch::Tensor &out, double target) {
  return (out - target).pow(2).mean();
}

int forward_line = 0;

struct Outcome {
  std::string error; // empty: it trained
  std::vector<torch::Tensor> g_grads;
  std::string stderr_text;
};

Outcome gan(Write write, bool before_g_backward, bool silent_writes) {
  Outcome o;
  torch::manual_seed(7);
  Net g_net(false, 4, 16, 8), d_net(false, 8, 16, 1);
  init_weights(*g_net, 0.0);
  init_weights(*d_net, 0.1);
  const HazardAction action = silent_writes ? HazardAction::kWarn : HazardAction::kSilent;
  std::optional<WithoutExplainer> oracle;
  if (!silent_writes)
    oracle.emplace();
  DDP g(g_net, test_group(), DDPOptions().hazard_detector(action));
  DDP d(d_net, test_group(),
        DDPOptions().hazard_detector(action).silent_writes(silent_writes));
  torch::optim::SGD sgd(d_net->parameters(), torch::optim::SGDOptions(0.1));
  torch::optim::Adam adam(d_net->parameters(), torch::optim::AdamOptions(0.1));
  auto z = torch::randn({6, 4}), real = torch::randn({6, 8});
  auto write_d = [&] {
    switch (write) {
    case Write::kSgdStep:
      sgd.step();
      break;
    case Write::kAdamStep:
      adam.step();
      break;
    case Write::kDataAdd:
      for (auto &p : d_net->parameters())
        p.data().add_(0.05);
      break;
    case Write::kBiasDataAdd:
      d_net->fc2->bias.data().add_(1.0);
      break;
    }
  };
  ::testing::internal::CaptureStderr();
  try {
    auto fake = g(z);
    auto d_real = d(real);
    forward_line = __LINE__ + 1;
    auto d_fake = d(fake);
    sgd.zero_grad();
    (mse(d_real, 1.0) + mse(d_fake, 0.0)).backward({}, /*retain_graph=*/true);
    if (before_g_backward)
      write_d();
    g_net->zero_grad();
    mse(d_fake, 1.0).backward();
    for (const auto &p : g_net->parameters())
      o.g_grads.push_back(p.grad().clone());
    if (!before_g_backward)
      write_d();
  } catch (const std::exception &e) {
    o.error = error_text(e);
  }
  o.stderr_text = ::testing::internal::GetCapturedStderr();
  return o;
}

bool same(const std::vector<torch::Tensor> &a, const std::vector<torch::Tensor> &b) {
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!torch::equal(a[i], b[i]))
      return false;
  return true;
}

bool reported_silent(const Outcome &o) {
  return o.stderr_text.find("silent write on rank") != std::string::npos;
}

} // namespace

TEST(SilentWrites, ReportedIffGradientsDifferFromTheReference) {
  const std::vector<Case> cases = {
      {"sgd_step", Write::kSgdStep,
       {"fc2.weight (parameter): saved by AddmmBackward0 at version ",
        "fc1.weight (parameter): saved by AddmmBackward0 at version ",
        "LibTorch's SGD step (it writes through .data())"}},
      {"adam_step", Write::kAdamStep, {}},
      {"data_add", Write::kDataAdd,
       {"fc2.weight (parameter): saved by AddmmBackward0 at version "}},
      // No node of D's graph saves fc2's bias: the write changes no gradient.
      {"bias_data_add", Write::kBiasDataAdd, {}},
  };
  std::map<std::string, int> labels;
  for (const auto &c : cases) {
    SCOPED_TRACE(c.name);
    const Outcome plain = gan(c.write, /*before_g_backward=*/true, /*silent_writes=*/false);
    const Outcome reference = gan(c.write, false, false);
    ASSERT_TRUE(reference.error.empty()) << reference.error;
    EXPECT_TRUE(plain.error.empty() || is_inplace_error(plain.error)) << plain.error;
    const std::string label = !plain.error.empty() ? "raises"
                              : same(plain.g_grads, reference.g_grads) ? "trains"
                                                                      : "silent";
    labels[label]++;

    const Outcome moded = gan(c.write, true, /*silent_writes=*/true);
    if (std::getenv("DDPGUARD_SHOW_REPORTS"))
      std::printf("%s (%s):\n%s\n", c.name.c_str(), label.c_str(), moded.stderr_text.c_str());
    EXPECT_EQ(moded.error, plain.error);
    EXPECT_TRUE(same(moded.g_grads, plain.g_grads)) << "the mode changed the gradients";
    EXPECT_EQ(reported_silent(moded), label == "silent") << moded.stderr_text;
    if (label == "silent") {
      EXPECT_NE(moded.stderr_text.find("silent_writes_tests.cpp:" +
                                       std::to_string(forward_line) + " (in "),
                std::string::npos)
          << moded.stderr_text;
      for (const auto &needle : c.named)
        EXPECT_NE(moded.stderr_text.find(needle), std::string::npos)
            << needle << "\n" << moded.stderr_text;
      EXPECT_EQ(moded.stderr_text.find("fc2.bias"), std::string::npos) << moded.stderr_text;
    } else {
      EXPECT_TRUE(c.named.empty()) << "a case expected to be reported is " << label;
    }
    // The write after G's backward: the control, reported by nothing.
    const Outcome after = gan(c.write, false, true);
    EXPECT_TRUE(after.error.empty()) << after.error;
    EXPECT_TRUE(same(after.g_grads, reference.g_grads));
    EXPECT_FALSE(reported_silent(after)) << after.stderr_text;
  }
  EXPECT_EQ(labels["silent"], 2);
  EXPECT_EQ(labels["raises"], 1);
  EXPECT_EQ(labels["trains"], 1);
}
