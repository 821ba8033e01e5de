//===- PythonParsingTest.cpp - newer spellings, line endings, deep trees --===//

#include "PythonFrontend/PythonFrontend.h"
#include "gtest/gtest.h"
#include <string>

using namespace ddpguard;
using namespace ddpguard::python;

namespace {

CheckResult check(llvm::StringRef Source) {
  static const RuleSet Rules = RuleSet::builtin();
  CheckOptions Options;
  Options.Version = *TorchVersion::parse("2.11.0");
  return checkSource(Source, Rules, Options);
}

// The two-view script (pytorch/pytorch#22095), reported at line 8, after a
// first line (or lines) that each test replaces with a spelling of a newer
// Python.
std::string twoView(llvm::StringRef FirstLine) {
  return (FirstLine + "\n" + R"py(from torch.nn.parallel import DistributedDataParallel as DDP
from torchvision.models import resnet50

model = DDP(resnet50())
for input0, input1 in loader:
    out1 = model(input0)
    out2 = model(input1)
    criterion(out1, out2).backward()
)py")
      .str();
}

void expectParsedAndChecked(llvm::StringRef FirstLine) {
  SCOPED_TRACE(FirstLine.take_front(80).str());
  CheckResult R = check(twoView(FirstLine));
  EXPECT_TRUE(R.SyntaxErrors.empty());
  EXPECT_FALSE(R.TooDeep);
  ASSERT_EQ(R.Findings.size(), 1u);
  EXPECT_EQ(R.Findings[0].Second.Line, 8u + FirstLine.count('\n'));
}

TEST(PythonParsing, TemplateStringsOfPython314) {
  expectParsedAndChecked("x = t\"hi {a}\"");
  expectParsedAndChecked("print(t'{x}' T\"y\" rt\"z\" tR'{w}', f(t\"a\", 2))");
  expectParsedAndChecked("x = t\"\"\"a{b!r:>{w}}\"\"\"");
}

TEST(PythonParsing, TypeParameterDefaultsOfPython313) {
  expectParsedAndChecked("def f[T = int](): pass");
  expectParsedAndChecked("class A[T: (int, str) = int, U = list[int]]: pass");
  expectParsedAndChecked("type A[T = int] = list[T]");
  expectParsedAndChecked("def f[*Ts = *tuple[int, str]](): pass");
  expectParsedAndChecked("def f[**P = [int, str]](): pass");
}

TEST(PythonParsing, StarredBracketInAnAssignedTuple) {
  expectParsedAndChecked("a = *[], e");
  expectParsedAndChecked("a = *(b), *{c}, e");
  expectParsedAndChecked("for q in *[1], e: pass");
  expectParsedAndChecked("def g():\n    return *[None] * 3, *g_xs, *[None] * n");
  expectParsedAndChecked("def g():\n    host, *rest = endpoint, *[]");
  expectParsedAndChecked("def g():\n    return None, *(\n        a)");
  expectParsedAndChecked("y = [a * [1], f(x, *[2])]");
}

TEST(PythonParsing, ASyntaxErrorIsStillOne) {
  CheckResult R = check(twoView("x = (1 +"));
  EXPECT_FALSE(R.SyntaxErrors.empty());
  R = check(twoView("x = q\"a\""));
  EXPECT_FALSE(R.SyntaxErrors.empty());
}

std::string withLineEnding(llvm::StringRef Source, llvm::StringRef Ending) {
  std::string Out;
  for (char C : Source)
    if (C == '\n')
      Out += Ending;
    else
      Out += C;
  return Out;
}

TEST(PythonParsing, CarriageReturnOnlyLineEndings) {
  CheckResult R = check(withLineEnding(twoView("import torch"), "\r"));
  EXPECT_TRUE(R.SyntaxErrors.empty());
  ASSERT_EQ(R.Findings.size(), 1u);
  EXPECT_EQ(R.Findings[0].Second.Line, 8u);
  EXPECT_EQ(R.Findings[0].First.Line, 7u);
}

TEST(PythonParsing, NoSyncFixKeepsTheFilesLineEndings) {
  for (llvm::StringRef Ending : {"\n", "\r\n", "\r"}) {
    SCOPED_TRACE(Ending.size());
    CheckResult R = check(withLineEnding(twoView("import torch"), Ending));
    ASSERT_EQ(R.Findings.size(), 1u);
    const Finding &F = R.Findings[0];
    EXPECT_EQ(F.NoSyncWithheld, "");
    EXPECT_EQ(F.NoSyncFix.Text,
              ("with model.no_sync():" + Ending + "        ").str());
  }
}

std::string nested(unsigned Depth, llvm::StringRef Open,
                   llvm::StringRef Close) {
  std::string S = "y = ";
  for (unsigned I = 0; I < Depth; ++I)
    S += Open;
  S += "x";
  for (unsigned I = 0; I < Depth; ++I)
    S += Close;
  return S;
}

std::string sum(unsigned Terms) {
  std::string S = "y = x";
  for (unsigned I = 1; I < Terms; ++I)
    S += " + x";
  return S;
}

TEST(PythonParsing, DeepNestingIsNotAnalysedAndDoesNotCrash) {
  for (const std::string &Deep :
       {sum(100000), nested(MaxNestingDepth + 1, "(", ")"),
        nested(20000, "[", "]"), nested(20000, "f(", ")"),
        nested(100000, "-", "")}) {
    CheckResult R = check(twoView(Deep));
    ASSERT_TRUE(R.TooDeep);
    EXPECT_EQ(R.TooDeep->Line, 1u);
    EXPECT_TRUE(R.Findings.empty());
  }
}

TEST(PythonParsing, NestingWithinTheLimitIsAnalysed) {
  // CPython 3.13 compiles a sum of 3,000 terms (a tree 3,000 levels deep).
  // Each level of the others is at most three (five) levels of tree-sitter's
  // nodes.
  for (const std::string &Deep :
       {sum(3000), nested(MaxNestingDepth / 3, "(", ")"),
        nested(MaxNestingDepth / 3, "f(", ")"),
        nested(MaxNestingDepth / 5, "[x.mul_(2), f(", ")]")})
    expectParsedAndChecked(Deep);
}

TEST(PythonParsing, ATooDeepFileLeavesTheOthersChecked) {
  static const RuleSet Rules = RuleSet::builtin();
  std::string Deep = sum(5000), Script = twoView("import torch");
  CheckOptions Options;
  std::vector<CheckResult> Results = checkSources(
      {SourceFile{"/p/deep.py", Deep, Options},
       SourceFile{"/p/train.py", Script, Options}},
      Rules);
  ASSERT_EQ(Results.size(), 2u);
  EXPECT_TRUE(Results[0].TooDeep);
  EXPECT_FALSE(Results[1].TooDeep);
  EXPECT_EQ(Results[1].Findings.size(), 1u);
}

} // namespace
