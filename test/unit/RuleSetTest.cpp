//===- RuleSetTest.cpp - Rule files ---------------------------------------===//

#include "Rules/RuleSet.h"
#include "gtest/gtest.h"

using namespace ddpguard;

namespace {

TEST(RuleSet, BuiltinDescribesTheRuntimeDDP) {
  RuleSet Rules = RuleSet::builtin();
  const WrapperRule *Rule = Rules.find("ddpguard::DistributedDataParallel");
  ASSERT_NE(Rule, nullptr);
  EXPECT_TRUE(Rule->isForwardMethod("forward"));
  EXPECT_TRUE(Rule->isForwardMethod("operator()"));
  EXPECT_TRUE(Rule->isForwardMethod("forward_group"));
  EXPECT_FALSE(Rule->isForwardMethod("module"));
  EXPECT_EQ(Rule->Broadcast.SettingKind, BroadcastSetting::Kind::OptionBuilder);
  EXPECT_EQ(Rule->Broadcast.Argument, 2u);
  EXPECT_EQ(Rule->Broadcast.Setter, "broadcast_buffers");
  EXPECT_EQ(Rule->ModuleTemplateArgument, 0u);
}

TEST(RuleSet, HandRolledExampleLoads) {
  RuleSet Rules;
  ASSERT_FALSE(bool(Rules.addFile(DDPGUARD_SOURCE_DIR
                                  "/rewrite-rules/examples/hand-rolled.yaml")));
  const WrapperRule *Rule = Rules.find("trainer::HandRolledDDP");
  ASSERT_NE(Rule, nullptr);
  EXPECT_EQ(Rule->Broadcast.SettingKind, BroadcastSetting::Kind::Field);
  EXPECT_EQ(Rule->Broadcast.FieldName, "broadcast_buffers");
  EXPECT_EQ(Rule->ModuleField, "module");
}

TEST(RuleSet, MalformedFileNamesFileLineAndExpectation) {
  RuleSet Rules;
  llvm::Error Err = Rules.addText("wrappers:\n"
                                  "  - type: X\n"
                                  "    module: {template-argument: 0}\n"
                                  "    forward-methods: [forward]\n"
                                  "    broadcast-buffers: {kind: sideways}\n",
                                  "bad.yaml");
  ASSERT_TRUE(bool(Err));
  std::string Message = llvm::toString(std::move(Err));
  EXPECT_NE(Message.find("bad.yaml:5:"), std::string::npos) << Message;
  EXPECT_NE(Message.find("unknown enumerated scalar"), std::string::npos)
      << Message;
}

TEST(RuleSet, MissingKeyIsReported) {
  RuleSet Rules;
  llvm::Error Err = Rules.addText("wrappers:\n  - type: X\n", "short.yaml");
  ASSERT_TRUE(bool(Err));
  std::string Message = llvm::toString(std::move(Err));
  EXPECT_NE(Message.find("short.yaml:2:"), std::string::npos) << Message;
  EXPECT_NE(Message.find("missing required key 'module'"), std::string::npos)
      << Message;
}

TEST(RuleSet, LaterRulesOverrideEarlierOnes) {
  RuleSet Rules = RuleSet::builtin();
  ASSERT_FALSE(bool(Rules.addText(
      "wrappers:\n"
      "  - type: ddpguard::DistributedDataParallel\n"
      "    module: {template-argument: 0}\n"
      "    forward-methods: [run]\n"
      "    broadcast-buffers: {kind: constructor-argument, argument: 2}\n",
      "override.yaml")));
  const WrapperRule *Rule = Rules.find("ddpguard::DistributedDataParallel");
  ASSERT_NE(Rule, nullptr);
  EXPECT_TRUE(Rule->isForwardMethod("run"));
  EXPECT_EQ(Rule->SourceFile, "override.yaml");
}

TEST(RuleSet, BuiltinRuntimePreservesVersionCountersFrom2121) {
  RuleSet Rules = RuleSet::builtin();
  const WrapperRule *Rule = Rules.find("ddpguard::DistributedDataParallel");
  ASSERT_NE(Rule, nullptr);
  EXPECT_FALSE(Rule->preservesVersionCounters({2, 11, 0}));
  EXPECT_FALSE(Rule->preservesVersionCounters({2, 12, 0}));
  EXPECT_TRUE(Rule->preservesVersionCounters({2, 12, 1}));
  EXPECT_TRUE(Rule->preservesVersionCounters({2, 15, 0}));
  EXPECT_EQ(Rule->Broadcast.setterAt({2, 12, 1}), "broadcast_buffers");
  EXPECT_EQ(Rule->Broadcast.setterAt({2, 13, 0}), "forward_sync_buffers");
  // The newer spelling wins when both are set, as in PyTorch 2.13.
  ASSERT_EQ(Rule->Broadcast.setters().size(), 2u);
  EXPECT_EQ(Rule->Broadcast.setters()[0], "forward_sync_buffers");
}

static const char WrapperHead[] = "wrappers:\n"
                                  "  - type: X\n"
                                  "    module: {template-argument: 0}\n"
                                  "    forward-methods: [forward]\n"
                                  "    broadcast-buffers: {kind: field, name: b}\n";

TEST(RuleSet, PreservesVersionCountersTakesBoolOrVersion) {
  for (auto [Value, From] :
       {std::pair<const char *, std::optional<TorchVersion>>{"true",
                                                             TorchVersion()},
        {"false", std::nullopt},
        {"2.12.1", TorchVersion{2, 12, 1}},
        {"2.13", TorchVersion{2, 13, 0}}}) {
    RuleSet Rules;
    ASSERT_FALSE(bool(Rules.addText(std::string(WrapperHead) +
                                        "    preserves-version-counters: " +
                                        Value + "\n",
                                    "p.yaml")))
        << Value;
    EXPECT_EQ(Rules.find("X")->PreservesVersionCountersFrom, From) << Value;
  }
  RuleSet Rules;
  ASSERT_FALSE(bool(Rules.addText(WrapperHead, "default.yaml")));
  // A hand-rolled broadcast is a plain copy_ unless the rule says otherwise.
  EXPECT_FALSE(Rules.find("X")->preservesVersionCounters({2, 15, 0}));
}

TEST(RuleSet, BadVersionIsReportedWithItsPlace) {
  RuleSet Rules;
  llvm::Error Err = Rules.addText(
      std::string(WrapperHead) + "    preserves-version-counters: soon\n",
      "v.yaml");
  ASSERT_TRUE(bool(Err));
  std::string Message = llvm::toString(std::move(Err));
  EXPECT_NE(Message.find("v.yaml:6:"), std::string::npos) << Message;
  EXPECT_NE(Message.find("expected true, false or the LibTorch version"),
            std::string::npos)
      << Message;
}

TEST(RuleSet, RenamedNeedsAnOptionBuilder) {
  RuleSet Rules;
  llvm::Error Err = Rules.addText(
      "wrappers:\n"
      "  - type: X\n"
      "    module: {template-argument: 0}\n"
      "    forward-methods: [forward]\n"
      "    broadcast-buffers:\n"
      "      kind: field\n"
      "      name: b\n"
      "      renamed: {setter: c, from: 2.13.0}\n",
      "r.yaml");
  ASSERT_TRUE(bool(Err));
  std::string Message = llvm::toString(std::move(Err));
  EXPECT_NE(Message.find("'renamed' is for a setter"), std::string::npos)
      << Message;
}

TEST(RuleSet, BuiltinPreparesWithAccelerate) {
  RuleSet Rules = RuleSet::builtin();
  const PreparerRule *Rule =
      Rules.findPreparer("accelerate.Accelerator", "prepare");
  ASSERT_NE(Rule, nullptr);
  EXPECT_EQ(Rule->WrapsIn, "torch.nn.parallel.DistributedDataParallel");
  EXPECT_EQ(Rule->OptionsKeyword, "kwargs_handlers");
  EXPECT_EQ(Rules.findPreparer("accelerate.Accelerator", "backward"), nullptr);
}

TEST(RuleSet, PreparerMustWrapInAKnownWrapper) {
  RuleSet Rules;
  llvm::Error Err = Rules.addText("wrappers: []\n"
                                  "preparers:\n"
                                  "  - classes: [lib.Trainer]\n"
                                  "    method: setup\n"
                                  "    wraps-in: lib.Unknown\n",
                                  "p.yaml");
  ASSERT_TRUE(bool(Err));
  std::string Message = llvm::toString(std::move(Err));
  EXPECT_NE(Message.find("no wrapper rule names"), std::string::npos) << Message;
}

TEST(RuleSet, PreparerOptionsNeedTheirKeyword) {
  RuleSet Rules = RuleSet::builtin();
  llvm::Error Err = Rules.addText(
      "wrappers: []\n"
      "preparers:\n"
      "  - classes: [lib.Trainer]\n"
      "    method: setup\n"
      "    wraps-in: torch.nn.parallel.DistributedDataParallel\n"
      "    options: [lib.Options]\n",
      "p.yaml");
  ASSERT_TRUE(bool(Err));
  std::string Message = llvm::toString(std::move(Err));
  EXPECT_NE(Message.find("'options' and 'options-keyword' go together"),
            std::string::npos)
      << Message;
}

TEST(RuleSet, TorchVersionParsesAndOrders) {
  EXPECT_EQ(TorchVersion::parse("2.12.1"), (TorchVersion{2, 12, 1}));
  EXPECT_EQ(TorchVersion::parse(" 2.13 "), (TorchVersion{2, 13, 0}));
  EXPECT_FALSE(TorchVersion::parse("2"));
  EXPECT_FALSE(TorchVersion::parse("2.x.1"));
  EXPECT_FALSE(TorchVersion::parse("2.12.1.4"));
  EXPECT_TRUE((TorchVersion{2, 12, 0}) < (TorchVersion{2, 12, 1}));
  EXPECT_TRUE((TorchVersion{2, 9, 9}) < (TorchVersion{2, 10, 0}));
  EXPECT_EQ((TorchVersion{2, 11, 0}).str(), "2.11.0");
}

} // namespace
