// The hazard detector is exact: it reports iff the backward fails with
// autograd's in-place error because a buffer broadcast overwrote a buffer the
// graph saved. Every program below runs twice per configuration on the same
// weights and data: once with the detector off (kSilent), whose outcome is the
// oracle, and once with it on (kWarn, then kThrow). The programs are the rows
// of docs/ground-truth.md (both tables) and retained-graph shapes
// (autograd::grad with retain_graph or create_graph, backward(retain_graph)).
// No program carries an expected label: the run without the detector decides.
#include "TestSupport.h"

#include <torch/csrc/autograd/functions/utils.h>
#include <torch/csrc/autograd/saved_variable.h>

#include <cstdlib>
#include <functional>
#include <optional>

using namespace ddpguard;
using namespace ddpguard::test;

namespace {

enum class Kind {
  kBatchNorm,  // TestSupport's Net: fc2(relu(bn1(fc1(x))))
  kNoBuffers,  // fc2(relu(fc1(x)))
  kBnNoStats,  // fc2(norm(fc1(x))), BatchNorm1d(track_running_stats=false)
  kLayerNorm,  // fc2(norm(fc1(x))), LayerNorm(8)
  kGroupNorm,  // fc2(norm(fc1(x))), GroupNorm(2, 8)
  kInstanceNorm, // InstanceNorm1d(8, track_running_stats=true) on [1, 8, 6]
  kScaleMul,   // fc2(fc1(x) * scale)
  kScaleAdd,   // fc2(fc1(x) + scale)
  kScaleMulInput, // fc2(fc1(x * scale4)), x without grad
};

struct ExactNetImpl : torch::nn::Module {
  explicit ExactNetImpl(Kind k)
      : kind(k), fc1(register_module("fc1", torch::nn::Linear(4, 8))),
        fc2(register_module("fc2", torch::nn::Linear(8, 3))) {
    switch (kind) {
    case Kind::kBatchNorm:
      bn1 = register_module("bn1", torch::nn::BatchNorm1d(8));
      break;
    case Kind::kBnNoStats:
      norm = register_module(
          "norm", torch::nn::BatchNorm1d(
                      torch::nn::BatchNormOptions(8).track_running_stats(false)));
      break;
    case Kind::kLayerNorm:
      norm = register_module("norm", torch::nn::LayerNorm(
                                         torch::nn::LayerNormOptions({8})));
      break;
    case Kind::kGroupNorm:
      norm = register_module("norm", torch::nn::GroupNorm(2, 8));
      break;
    case Kind::kInstanceNorm:
      norm = register_module(
          "norm", torch::nn::InstanceNorm1d(
                      torch::nn::InstanceNormOptions(8).track_running_stats(true)));
      break;
    case Kind::kScaleMul:
    case Kind::kScaleAdd:
      scale = register_buffer("scale", torch::full({8}, 1.5));
      break;
    case Kind::kScaleMulInput:
      scale = register_buffer("scale4", torch::full({4}, 1.5));
      break;
    case Kind::kNoBuffers:
      break;
    }
  }
  torch::Tensor forward(torch::Tensor x) {
    switch (kind) {
    case Kind::kBatchNorm:
      return fc2(torch::relu(bn1(fc1(x))));
    case Kind::kNoBuffers:
      return fc2(torch::relu(fc1(x)));
    case Kind::kInstanceNorm:
      return fc2(norm.forward(fc1(x).t().unsqueeze(0)).squeeze(0).t());
    case Kind::kScaleMul:
      return fc2(fc1(x) * scale);
    case Kind::kScaleAdd:
      return fc2(fc1(x) + scale);
    case Kind::kScaleMulInput:
      return fc2(fc1(x * scale));
    default:
      return fc2(norm.forward(fc1(x)));
    }
  }
  Kind kind;
  torch::nn::Linear fc1, fc2;
  torch::nn::BatchNorm1d bn1{nullptr};
  torch::nn::AnyModule norm;
  torch::Tensor scale;
};
TORCH_MODULE(ExactNet);
using DDP = DistributedDataParallel<ExactNet>;
using Body = std::function<void(DDP &, const torch::Tensor &, const torch::Tensor &)>;

torch::Tensor loss_of(const torch::Tensor &t) { return t.pow(2).mean(); }

std::vector<torch::Tensor> params_of(DDP &d) { return d.module()->parameters(); }

// A gradient penalty on the parameters' gradients (their graph exists only
// with create_graph).
torch::Tensor penalty_of(const std::vector<torch::Tensor> &grads) {
  torch::Tensor p = torch::zeros({});
  for (const auto &g : grads)
    if (g.defined())
      p = p + g.pow(2).sum();
  return p;
}

// docs/ground-truth.md's row bodies (ground_truth_tests.cpp's), then the
// retained-graph shapes.
const std::vector<std::pair<const char *, Body>> &bodies() {
  static const std::vector<std::pair<const char *, Body>> all = {
      {"both_backward",
       [](DDP &d, auto &a, auto &b) {
         auto o1 = d(a);
         auto o2 = d(b);
         (loss_of(o1) + loss_of(o2)).backward();
       }},
      {"second_forward_no_grad",
       [](DDP &d, auto &a, auto &b) {
         auto o1 = d(a);
         {
           torch::NoGradGuard no_grad;
           d(b);
         }
         loss_of(o1).backward();
       }},
      {"first_forward_no_grad",
       [](DDP &d, auto &a, auto &b) {
         {
           torch::NoGradGuard no_grad;
           d(a);
         }
         loss_of(d(b)).backward();
       }},
      {"first_output_unused",
       [](DDP &d, auto &a, auto &b) {
         d(a);
         loss_of(d(b)).backward();
       }},
      {"loop_forward_backward",
       [](DDP &d, auto &a, auto &b) {
         for (int i = 0; i < 3; ++i)
           loss_of(d(i % 2 ? a : b)).backward();
       }},
      {"loop_accumulated_loss",
       [](DDP &d, auto &a, auto &b) {
         torch::Tensor loss = torch::zeros({});
         for (int i = 0; i < 3; ++i)
           loss = loss + loss_of(d(i % 2 ? a : b));
         loss.backward();
       }},
      {"forward_backward_twice",
       [](DDP &d, auto &a, auto &b) {
         auto o1 = d(a);
         loss_of(o1).backward();
         auto o2 = d(b);
         loss_of(o2).backward();
       }},
      {"autograd_grad_of_first",
       [](DDP &d, auto &a, auto &b) {
         auto o1 = d(a);
         d(b);
         torch::autograd::grad({loss_of(o1)}, params_of(d), {}, c10::nullopt,
                               false, /*allow_unused=*/true);
       }},
      {"retain_graph_of_second",
       [](DDP &d, auto &a, auto &b) {
         auto o1 = d(a);
         auto o2 = d(b);
         loss_of(o2).backward({}, /*retain_graph=*/true);
       }},
      {"first_output_detached",
       [](DDP &d, auto &a, auto &b) {
         auto o1 = d(a).detach();
         auto o2 = d(b);
         (loss_of(o1) + loss_of(o2)).backward();
       }},
      {"inner_module_direct",
       [](DDP &d, auto &a, auto &b) {
         auto o1 = d(a);
         d.module()->forward(b);
         loss_of(o1).backward();
       }},
      // The loss of the last step kept alive into the next one (a common
      // logging pattern): its graph is alive, freed, and never traversed.
      {"loop_keeping_last_loss",
       [](DDP &d, auto &a, auto &b) {
         torch::Tensor last;
         for (int i = 0; i < 3; ++i) {
           auto loss = loss_of(d(i % 2 ? a : b));
           loss.backward();
           last = loss;
         }
       }},
      // autograd::grad of the first output with respect to fc2's weight only:
      // the engine does not run the nodes below fc2.
      {"grad_of_first_wrt_last_layer",
       [](DDP &d, auto &a, auto &b) {
         auto o1 = d(a);
         d(b);
         torch::autograd::grad({loss_of(o1)}, {d.module()->fc2->weight});
       }},
      // Retained graphs: the first forward's graph survives a backward.
      {"grad_retain_graph_then_forward",
       [](DDP &d, auto &a, auto &b) {
         auto o1 = d(a);
         auto l1 = loss_of(o1);
         torch::autograd::grad({l1}, params_of(d), {}, /*retain_graph=*/true,
                               false, /*allow_unused=*/true);
         d(b);
         l1.backward();
       }},
      {"grad_retain_graph_no_second_forward",
       [](DDP &d, auto &a, auto &) {
         auto l1 = loss_of(d(a));
         torch::autograd::grad({l1}, params_of(d), {}, /*retain_graph=*/true,
                               false, /*allow_unused=*/true);
         l1.backward();
       }},
      {"grad_create_graph_then_forward",
       [](DDP &d, auto &a, auto &b) {
         auto l1 = loss_of(d(a));
         auto grads = torch::autograd::grad({l1}, params_of(d), {}, true,
                                            /*create_graph=*/true, true);
         d(b);
         l1.backward();
       }},
      {"grad_create_graph_penalty_then_forward",
       [](DDP &d, auto &a, auto &b) {
         auto l1 = loss_of(d(a));
         auto grads = torch::autograd::grad({l1}, params_of(d), {}, true,
                                            /*create_graph=*/true, true);
         d(b);
         (l1 + penalty_of(grads)).backward();
       }},
      {"grad_create_graph_only_penalty_then_forward",
       [](DDP &d, auto &a, auto &b) {
         auto l1 = loss_of(d(a));
         auto grads = torch::autograd::grad({l1}, params_of(d), {}, true,
                                            /*create_graph=*/true, true);
         d(b);
         penalty_of(grads).backward();
       }},
      {"grad_create_graph_no_second_forward",
       [](DDP &d, auto &a, auto &) {
         auto l1 = loss_of(d(a));
         auto grads = torch::autograd::grad({l1}, params_of(d), {}, true,
                                            /*create_graph=*/true, true);
         (l1 + penalty_of(grads)).backward();
       }},
      {"backward_retain_graph_then_forward",
       [](DDP &d, auto &a, auto &b) {
         auto l1 = loss_of(d(a));
         l1.backward({}, /*retain_graph=*/true);
         d(b);
         l1.backward();
       }},
      {"backward_retain_graph_no_second_forward",
       [](DDP &d, auto &a, auto &) {
         auto l1 = loss_of(d(a));
         l1.backward({}, /*retain_graph=*/true);
         l1.backward();
       }},
      // The second forward's graph retained and traversed again: never stale.
      {"backward_retain_graph_of_second_twice",
       [](DDP &d, auto &a, auto &b) {
         d(a);
         auto l2 = loss_of(d(b));
         l2.backward({}, /*retain_graph=*/true);
         l2.backward();
       }},
  };
  return all;
}

struct Program {
  std::string name;
  Kind kind;
  bool eval;
  Body body;
};

std::vector<Program> programs() {
  std::vector<Program> out;
  for (const auto &[name, body] : bodies()) {
    out.push_back({std::string("batchnorm/") + name, Kind::kBatchNorm, false, body});
    out.push_back({std::string("custom_buffer_mul/") + name, Kind::kScaleMul, false,
                   body});
    out.push_back({std::string("custom_buffer_add/") + name, Kind::kScaleAdd, false,
                   body});
  }
  const Body &both = bodies().front().second;
  out.push_back({"batchnorm_eval/both_backward", Kind::kBatchNorm, true, both});
  out.push_back({"no_buffers/both_backward", Kind::kNoBuffers, false, both});
  out.push_back({"bn_no_running_stats/both_backward", Kind::kBnNoStats, false, both});
  out.push_back({"layernorm/both_backward", Kind::kLayerNorm, false, both});
  out.push_back({"groupnorm/both_backward", Kind::kGroupNorm, false, both});
  out.push_back({"instancenorm_tracked/both_backward", Kind::kInstanceNorm, false, both});
  out.push_back({"instancenorm_tracked_eval/both_backward", Kind::kInstanceNorm, true,
                 both});
  out.push_back({"custom_buffer_mul_input/both_backward", Kind::kScaleMulInput, false,
                 both});
  return out;
}

struct Outcome {
  std::string error; // empty: the program ran
  bool hazard_error = false;
  std::string stderr_text;
};

Outcome run(const Program &p, HazardAction action) {
  ExactNet net(p.kind);
  init_weights(*net, 0.01 * launch_env().rank);
  if (p.eval)
    net->eval();
  DDP ddp(net, test_group(), DDPOptions().hazard_detector(action));
  torch::manual_seed(100 + launch_env().rank);
  auto a = torch::randn({6, 4});
  auto b = torch::randn({6, 4});
  std::optional<WithoutExplainer> oracle;
  if (action == HazardAction::kSilent)
    oracle.emplace();
  Outcome o;
  ::testing::internal::CaptureStderr();
  try {
    p.body(ddp, a, b);
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
  return o.stderr_text.find("DistributedDataParallel hazard") != std::string::npos;
}

// The report's lines naming the saved buffers, between the first forward's
// line and the broadcast's.
std::string saved_buffer_lines(const std::string &report) {
  auto from = report.find("saved module buffers for backward:");
  auto to = report.find("then broadcast the buffers");
  if (from == std::string::npos || to == std::string::npos || to < from)
    return "";
  return report.substr(from, to - from);
}

} // namespace

TEST(DetectorExactness, ReportsIffAutogradFailsOnABroadcastBuffer) {
  int failing = 0, training = 0;
  std::string failing_names;
  for (const auto &p : programs()) {
    SCOPED_TRACE(p.name);
    const Outcome off = run(p, HazardAction::kSilent);
    const bool fails = is_inplace_error(off.error);
    EXPECT_TRUE(off.error.empty() || fails)
        << "unexpected error without the detector: " << off.error;
    EXPECT_FALSE(reported(off)) << off.stderr_text;
    (fails ? failing : training)++;
    if (fails)
      failing_names += " " + p.name;

    // Warning: the same outcome as without the detector, and a report iff
    // that outcome is autograd's in-place error.
    const Outcome warn = run(p, HazardAction::kWarn);
    if (std::getenv("DDPGUARD_SHOW_REPORTS") && reported(warn))
      std::printf("%s:\n%s\n", p.name.c_str(), warn.stderr_text.c_str());
    EXPECT_EQ(warn.error, off.error);
    EXPECT_EQ(reported(warn), fails) << warn.stderr_text;
    if (fails && reported(warn)) {
      const std::string saved = saved_buffer_lines(warn.stderr_text);
      EXPECT_NE(saved.find("(saved by "), std::string::npos) << warn.stderr_text;
      // Only buffers a node saved, never the step counter BatchNorm does not
      // save.
      EXPECT_EQ(saved.find("num_batches_tracked"), std::string::npos) << saved;
      if (p.kind == Kind::kBatchNorm)
        for (const char *b : {"bn1.running_mean", "bn1.running_var"})
          EXPECT_NE(saved.find(b), std::string::npos) << b << "\n" << saved;
      if (p.kind == Kind::kScaleMul)
        EXPECT_NE(saved.find(" scale (saved by MulBackward0)"), std::string::npos)
            << saved;
      EXPECT_NE(warn.stderr_text.find("detector_exactness_tests.cpp:"),
                std::string::npos)
          << warn.stderr_text;
      EXPECT_EQ(warn.stderr_text.find("could not inspect"), std::string::npos)
          << warn.stderr_text;
    }

    // Throwing: HazardError instead of autograd's error, nothing else changes.
    const Outcome thrown = run(p, HazardAction::kThrow);
    EXPECT_EQ(thrown.hazard_error, fails) << thrown.error;
    if (!fails)
      EXPECT_EQ(thrown.error, off.error);
  }
  // Both outcomes occur, so the comparison above can fail either way; from
  // 2.12.1 the broadcast preserves versions and nothing fails.
  if (kBroadcastFailsBackward)
    EXPECT_GE(failing, 10);
  else
    EXPECT_EQ(failing, 0) << failing_names;
  EXPECT_GE(training, 30);
  std::printf("DetectorExactness: %d programs fail with autograd's in-place "
              "error without the detector, %d train; failing:%s\n",
              failing, training, failing_names.c_str());

}

// The report of a retained graph names the forward whose graph fails, the
// broadcasting forward, the node autograd rejects and the buffers it saved.
TEST(DetectorExactness, RetainedGraphReport) {
  ExactNet net(Kind::kBatchNorm);
  DDP ddp(net, test_group(), DDPOptions().hazard_detector(HazardAction::kThrow));
  auto a = torch::randn({6, 4}), b = torch::randn({6, 4});
  const int first_line = __LINE__ + 1;
  auto l1 = loss_of(ddp(a));
  l1.backward({}, /*retain_graph=*/true);
  const int second_line = __LINE__ + 1;
  ddp(b);
  std::string report;
  if (!kBroadcastFailsBackward) {
    EXPECT_NO_THROW(l1.backward()); // the broadcast preserved the versions
    return;
  }
  try {
    l1.backward();
  } catch (const HazardError &e) {
    report = e.what();
  }
  ASSERT_FALSE(report.empty()) << "no HazardError";
  for (const std::string needle :
       {"detector_exactness_tests.cpp:" + std::to_string(first_line),
        "detector_exactness_tests.cpp:" + std::to_string(second_line),
        std::string("bn1.running_mean bn1.running_var (saved by "
                    "NativeBatchNormBackward0)"),
        std::string("rejects it at NativeBatchNormBackward0"),
        std::string("entering at its output node ")})
    EXPECT_NE(report.find(needle), std::string::npos) << needle << "\n" << report;
}

namespace {

// A hand-written autograd node without compiled_args (as a third-party
// extension might have): the detector cannot unpack what it saved.
struct OpaqueMulBackward : torch::autograd::Node {
  torch::autograd::SavedVariable other;
  torch::autograd::variable_list apply(torch::autograd::variable_list &&grads) override {
    return {grads[0] * other.unpack()};
  }
  std::string name() const override { return "OpaqueMulBackward"; }
};

// x * buffer, with the buffer saved by OpaqueMulBackward.
torch::Tensor opaque_mul(const torch::Tensor &x, const torch::Tensor &buffer) {
  auto out = x.detach() * buffer;
  if (!x.requires_grad())
    return out;
#if DDPGUARD_INTRUSIVE_NODES
  auto node = c10::make_intrusive<OpaqueMulBackward>();
#else
  auto node = std::shared_ptr<OpaqueMulBackward>(new OpaqueMulBackward(),
                                                 torch::autograd::deleteNode);
#endif
  node->other = torch::autograd::SavedVariable(buffer, /*is_output=*/false);
  node->set_next_edges(torch::autograd::collect_next_edges(x));
  torch::autograd::set_history(out, node);
  return out;
}

struct OpaqueNetImpl : torch::nn::Module {
  OpaqueNetImpl()
      : fc1(register_module("fc1", torch::nn::Linear(4, 8))),
        fc2(register_module("fc2", torch::nn::Linear(8, 3))) {
    scale = register_buffer("scale", torch::full({8}, 1.5));
  }
  torch::Tensor forward(torch::Tensor x) { return fc2(opaque_mul(fc1(x), scale)); }
  torch::nn::Linear fc1, fc2;
  torch::Tensor scale;
};
TORCH_MODULE(OpaqueNet);

} // namespace

// A node the detector cannot inspect: it reports conservatively and names
// the node, whether or not autograd then fails (here it does: the node saved
// the buffer). One forward, or two with broadcast off, stays silent.
TEST(DetectorExactness, UninspectableNodeIsReportedConservatively) {
  auto run_opaque = [](int forwards, bool broadcast, std::string &err) {
    OpaqueNet net;
    DistributedDataParallel<OpaqueNet> ddp(
        net, test_group(), DDPOptions().broadcast_buffers(broadcast));
    auto a = torch::randn({6, 4}), b = torch::randn({6, 4});
    std::string error;
    ::testing::internal::CaptureStderr();
    try {
      auto loss = loss_of(ddp(a));
      if (forwards == 2)
        loss = loss + loss_of(ddp(b));
      loss.backward();
    } catch (const std::exception &e) {
      error = error_text(e);
    }
    err = ::testing::internal::GetCapturedStderr();
    return error;
  };
  std::string err;
  const std::string error = run_opaque(2, true, err);
  if (!kBroadcastFailsBackward) {
    EXPECT_EQ(error, ""); // the broadcast preserved the versions
    EXPECT_EQ(err.find("hazard"), std::string::npos) << err;
    return;
  }
  EXPECT_TRUE(is_inplace_error(error)) << error;
  EXPECT_NE(err.find("DistributedDataParallel hazard"), std::string::npos) << err;
  EXPECT_NE(err.find("could not inspect"), std::string::npos) << err;
  EXPECT_NE(err.find("OpaqueMulBackward (compiled_args not implemented"),
            std::string::npos)
      << err;
  EXPECT_EQ(run_opaque(1, true, err), "");
  EXPECT_EQ(err.find("hazard"), std::string::npos) << err;
  EXPECT_EQ(run_opaque(2, false, err), "");
  EXPECT_EQ(err.find("hazard"), std::string::npos) << err;
}
