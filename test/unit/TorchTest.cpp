//===- TorchTest.cpp - lib/Torch: the table lookup and the in-place test --===//

#include "Torch/InPlace.h"
#include "Torch/Ops.h"
#include <gtest/gtest.h>

using namespace ddpguard::torch;

namespace {

TEST(TorchInPlace, TrailingUnderscoreWrites) {
  EXPECT_TRUE(isInPlaceOp("add_"));
  EXPECT_TRUE(isInPlaceOp("zero_"));
  EXPECT_TRUE(isInPlaceOp("clip_grad_norm_"));
  // One leading underscore: torch._foreach_add_ bumps the versions.
  EXPECT_TRUE(isInPlaceOp("_foreach_add_"));
  EXPECT_FALSE(isInPlaceOp("add"));
}

TEST(TorchInPlace, NamesThatLeaveTheDataAsIs) {
  EXPECT_FALSE(isInPlaceOp("requires_grad_"));
  EXPECT_FALSE(isInPlaceOp("detach_"));
  EXPECT_FALSE(isInPlaceOp("share_memory_"));
  EXPECT_FALSE(isInPlaceOp("rename_"));
  EXPECT_FALSE(isInPlaceOp("_"));
  EXPECT_FALSE(isInPlaceOp("__init__"));
  EXPECT_FALSE(isInPlaceOp(""));
}

TEST(TorchInPlace, CompoundAssignmentsNotComparisons) {
  EXPECT_TRUE(isInPlaceOp("operator+="));
  EXPECT_TRUE(isInPlaceOp("operator/="));
  EXPECT_TRUE(isInPlaceOp("operator<<="));
  EXPECT_FALSE(isInPlaceOp("operator="));
  EXPECT_FALSE(isInPlaceOp("operator=="));
  EXPECT_FALSE(isInPlaceOp("operator<="));
  EXPECT_FALSE(isInPlaceOp("operator>="));
  EXPECT_FALSE(isInPlaceOp("operator!="));
}

TEST(TorchOps, FindsTheEntryOfTheCalledForm) {
  // where's method form puts the condition second.
  const SavedOp *Function = findSavedOp("where", SavedOpForm::Function);
  const SavedOp *Method = findSavedOp("where", SavedOpForm::Method);
  ASSERT_TRUE(Function && Method);
  EXPECT_EQ(Function->Saves, "0:12");
  EXPECT_EQ(Method->Saves, "1:02");
  // An Any entry answers every form; a Method entry answers no function.
  const SavedOp *Mul = findSavedOp("mul", SavedOpForm::Functional);
  ASSERT_TRUE(Mul);
  EXPECT_EQ(Mul->Form, SavedOpForm::Any);
  EXPECT_EQ(findSavedOp("add_", SavedOpForm::Function), nullptr);
  EXPECT_EQ(findSavedOp("no_such_op", SavedOpForm::Any), nullptr);
}

TEST(TorchOps, SaveRules) {
  auto Rules = saveRules("0:12 r:0");
  ASSERT_EQ(Rules.size(), 2u);
  EXPECT_EQ(Rules[0].Operand, 0u);
  EXPECT_EQ(Rules[0].Triggers, (llvm::SmallVector<unsigned, 3>{1, 2}));
  EXPECT_FALSE(Rules[1].Operand);
  EXPECT_EQ(Rules[1].Triggers, (llvm::SmallVector<unsigned, 3>{0}));
  EXPECT_TRUE(saveRules("").empty());
}

TEST(TorchOps, ViewsAndTwins) {
  EXPECT_TRUE(isViewMethod("transpose"));
  EXPECT_TRUE(isViewMethod("float"));
  EXPECT_FALSE(isViewMethod("mul"));
  EXPECT_TRUE(hasOutOfPlaceTwin("mul_"));
  EXPECT_FALSE(hasOutOfPlaceTwin("zero_"));
}

} // namespace
