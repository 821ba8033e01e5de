// Every row of DESIGN.md §1, in C++, on real Gloo groups (world 1, 2, 3), under
// each buffer configuration and detector mode:
// - default options, detector warns: error rows raise autograd's in-place error
//   after the detector's report; ok rows run and print no report;
// - detector throws: error rows raise HazardError instead; ok rows run;
// - detector silent: error rows raise the autograd error with no report;
// - broadcast_buffers(false) and BufferBroadcast::kOncePerBackward: every row runs.
#include "TestSupport.h"

#include <functional>

using namespace ddpguard;
using namespace ddpguard::test;
using DDP = DistributedDataParallel<Net>;

namespace {

struct Row {
  const char *name;
  bool error;          // PyTorch 1.13's result for the row
  bool with_bn = true; // "module without buffers" row uses none
  bool eval = false;
  std::function<void(DDP &, const torch::Tensor &, const torch::Tensor &)> body;
};

torch::Tensor loss_of(const torch::Tensor &t) { return t.pow(2).mean(); }

std::vector<Row> rows() {
  return {
      {"two_forwards_one_backward", true, true, false,
       [](DDP &d, auto &a, auto &b) {
         auto o1 = d(a);
         auto o2 = d(b);
         (loss_of(o1) + loss_of(o2)).backward();
       }},
      {"module_without_buffers", false, false, false,
       [](DDP &d, auto &a, auto &b) {
         auto o1 = d(a);
         auto o2 = d(b);
         (loss_of(o1) + loss_of(o2)).backward();
       }},
      {"eval_mode", true, true, true,
       [](DDP &d, auto &a, auto &b) {
         auto o1 = d(a);
         auto o2 = d(b);
         (loss_of(o1) + loss_of(o2)).backward();
       }},
      {"second_forward_no_grad", true, true, false,
       [](DDP &d, auto &a, auto &b) {
         auto o1 = d(a);
         {
           torch::NoGradGuard no_grad;
           d(b);
         }
         loss_of(o1).backward();
       }},
      {"first_forward_no_grad", false, true, false,
       [](DDP &d, auto &a, auto &b) {
         {
           torch::NoGradGuard no_grad;
           d(a);
         }
         auto o2 = d(b);
         loss_of(o2).backward();
       }},
      {"first_output_unused", false, true, false,
       [](DDP &d, auto &a, auto &b) {
         d(a);
         auto o2 = d(b);
         loss_of(o2).backward();
       }},
      {"loop_forward_backward", false, true, false,
       [](DDP &d, auto &a, auto &b) {
         for (int i = 0; i < 3; ++i)
           loss_of(d(i % 2 ? a : b)).backward();
       }},
      {"loop_accumulated_loss", true, true, false,
       [](DDP &d, auto &a, auto &b) {
         torch::Tensor loss = torch::zeros({});
         for (int i = 0; i < 3; ++i)
           loss = loss + loss_of(d(i % 2 ? a : b));
         loss.backward();
       }},
      {"forward_backward_twice", false, true, false,
       [](DDP &d, auto &a, auto &b) {
         auto o1 = d(a);
         loss_of(o1).backward();
         auto o2 = d(b);
         loss_of(o2).backward();
       }},
      {"autograd_grad_of_first", true, true, false,
       [](DDP &d, auto &a, auto &b) {
         auto o1 = d(a);
         d(b);
         torch::autograd::grad({loss_of(o1)}, d.module()->parameters(), {},
                               /*retain_graph=*/c10::nullopt,
                               /*create_graph=*/false, /*allow_unused=*/true);
       }},
      {"retain_graph_of_second", false, true, false,
       [](DDP &d, auto &a, auto &b) {
         auto o1 = d(a); // kept alive, never differentiated
         auto o2 = d(b);
         loss_of(o2).backward({}, /*retain_graph=*/true);
       }},
      {"first_output_detached", false, true, false,
       [](DDP &d, auto &a, auto &b) {
         auto o1 = d(a).detach();
         auto o2 = d(b);
         (loss_of(o1) + loss_of(o2)).backward();
       }},
      {"inner_module_direct", false, true, false,
       [](DDP &d, auto &a, auto &b) {
         auto o1 = d(a);
         d.module()->forward(b);
         loss_of(o1).backward();
       }},
  };
}

enum class Config { kWarn, kThrow, kSilent, kBroadcastOff, kOncePerBackward };

DDPOptions options_for(Config c) {
  switch (c) {
  case Config::kWarn:
    return DDPOptions();
  case Config::kThrow:
    return DDPOptions().hazard_detector(HazardAction::kThrow);
  case Config::kSilent:
    return DDPOptions().hazard_detector(HazardAction::kSilent);
  case Config::kBroadcastOff:
    return DDPOptions().broadcast_buffers(false);
  case Config::kOncePerBackward:
    return DDPOptions().buffer_broadcast(BufferBroadcast::kOncePerBackward);
  }
  return DDPOptions();
}

void run_matrix(Config config) {
  const bool broadcasting = config == Config::kWarn ||
                            config == Config::kThrow || config == Config::kSilent;
  for (const auto &row : rows()) {
    SCOPED_TRACE(row.name);
    Net net(row.with_bn);
    init_weights(*net, 0.01 * launch_env().rank);
    if (row.eval)
      net->eval();
    DDP ddp(net, test_group(), options_for(config));
    torch::manual_seed(100 + launch_env().rank);
    auto a = torch::randn({6, 4});
    auto b = torch::randn({6, 4});

    const bool expect_error = row.error && broadcasting;
    std::string error;
    bool hazard_error = false;
    ::testing::internal::CaptureStderr();
    try {
      row.body(ddp, a, b);
    } catch (const HazardError &e) {
      hazard_error = true;
      error = e.what();
    } catch (const std::exception &e) {
      error = error_text(e);
    }
    const std::string err = ::testing::internal::GetCapturedStderr();
    const bool reported =
        err.find("DistributedDataParallel hazard") != std::string::npos;

    if (!expect_error) {
      EXPECT_EQ(error, "") << "row should run";
      EXPECT_FALSE(reported) << err;
      continue;
    }
    switch (config) {
    case Config::kWarn:
      EXPECT_TRUE(is_inplace_error(error)) << error;
      EXPECT_TRUE(reported) << "no detector report before the autograd error";
      EXPECT_NE(err.find("bn1.running_mean"), std::string::npos) << err;
      EXPECT_NE(err.find("ground_truth_tests.cpp:"), std::string::npos) << err;
      break;
    case Config::kThrow:
      EXPECT_TRUE(hazard_error) << error;
      EXPECT_NE(error.find("bn1.running_var"), std::string::npos) << error;
      break;
    case Config::kSilent:
      EXPECT_TRUE(is_inplace_error(error)) << error;
      EXPECT_FALSE(reported) << err;
      break;
    default:
      break;
    }
  }
}

} // namespace

TEST(GroundTruth, DetectorWarns) { run_matrix(Config::kWarn); }
TEST(GroundTruth, DetectorThrows) { run_matrix(Config::kThrow); }
TEST(GroundTruth, DetectorSilent) { run_matrix(Config::kSilent); }
TEST(GroundTruth, BroadcastBuffersOff) { run_matrix(Config::kBroadcastOff); }
TEST(GroundTruth, OncePerBackward) { run_matrix(Config::kOncePerBackward); }

// The report names both call sites by line, the clobbered buffers, and the
// three fixes.
TEST(Detector, ReportNamesCallSitesBuffersAndFixes) {
  Net net;
  DDP ddp(net, test_group());
  auto a = torch::randn({6, 4}), b = torch::randn({6, 4});
  ::testing::internal::CaptureStderr();
  const int first_line = __LINE__ + 1;
  auto o1 = ddp(a);
  const int second_line = __LINE__ + 1;
  auto o2 = ddp.forward(b);
  EXPECT_ANY_THROW((o1.sum() + o2.sum()).backward());
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("ground_truth_tests.cpp:" + std::to_string(first_line)),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("ground_truth_tests.cpp:" + std::to_string(second_line)),
            std::string::npos)
      << err;
  for (const char *needle :
       {"bn1.running_mean", "bn1.running_var", "bn1.num_batches_tracked",
        "broadcast_buffers(false)", "forward_group(", "kOncePerBackward"})
    EXPECT_NE(err.find(needle), std::string::npos) << needle << "\n" << err;
}

// forward_group: one broadcast for N inner forwards, so the two-view pattern
// runs with buffer synchronisation on.
TEST(Detector, ForwardGroupIsClean) {
  Net net;
  DDP ddp(net, test_group(), DDPOptions().hazard_detector(HazardAction::kThrow));
  auto a = torch::randn({6, 4}), b = torch::randn({6, 4});
  for (int step = 0; step < 2; ++step) {
    auto [o1, o2] = ddp.forward_group(a, b);
    EXPECT_TRUE(ddp.last_forward_broadcast());
    EXPECT_NO_THROW((o1.sum() + o2.sum()).backward());
  }
}
