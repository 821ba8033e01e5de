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

} // namespace
