//===- PythonFrontendTest.cpp - Python scripts through the same model -----===//

#include "PythonFrontend/PythonFrontend.h"
#include "gtest/gtest.h"

using namespace ddpguard;
using namespace ddpguard::python;

namespace {

CheckResult check(llvm::StringRef Source, const char *Version = "2.11.0") {
  static const RuleSet Rules = RuleSet::builtin();
  CheckOptions Options;
  Options.Version = *TorchVersion::parse(Version);
  return checkSource(Source, Rules, Options);
}

// The classic two-view script (pytorch/pytorch#22095).
const char TwoView[] = R"py(import torch
from torch.nn.parallel import DistributedDataParallel as DDP
from torchvision.models import resnet50

model = DDP(resnet50())
for input0, input1 in loader:
    out1 = model(input0)
    out2 = model(input1)
    criterion(out1, out2).backward()
)py";

TEST(PythonFrontend, TwoViewScriptIsReportedAtItsSecondForward) {
  CheckResult R = check(TwoView);
  ASSERT_EQ(R.Findings.size(), 1u);
  const Finding &F = R.Findings[0];
  EXPECT_EQ(F.Object, "model");
  EXPECT_EQ(F.Function, "<module>");
  EXPECT_EQ(F.Second.Line, 8u);
  EXPECT_EQ(F.Second.Column, 12u);
  EXPECT_EQ(F.First.Line, 7u);
  EXPECT_EQ(F.Backward.Line, 9u);
  EXPECT_FALSE(F.SameForwardInALoop);
  EXPECT_TRUE(R.SyntaxErrors.empty());
}

TEST(PythonFrontend, FromTorch2121TheBroadcastPreservesVersionCounters) {
  EXPECT_TRUE(check(TwoView, "2.12.1").Findings.empty());
  EXPECT_TRUE(check(TwoView, "2.15.0").Findings.empty());
  EXPECT_EQ(check(TwoView, "2.12.0").Findings.size(), 1u);
}

TEST(PythonFrontend, BroadcastBuffersFalseIsOk) {
  EXPECT_TRUE(check(R"py(
from torch.nn.parallel import DistributedDataParallel as DDP
model = DDP(net, device_ids=[0], broadcast_buffers=False)
(model(a) - model(b)).sum().backward()
)py")
                  .Findings.empty());
  // The fifth positional argument is broadcast_buffers.
  EXPECT_TRUE(check(R"py(
from torch.nn.parallel import DistributedDataParallel as DDP
model = DDP(net, None, None, 0, False)
(model(a) - model(b)).sum().backward()
)py")
                  .Findings.empty());
}

TEST(PythonFrontend, ForwardSyncBuffersFromTorch213) {
  const char Source[] = R"py(
import torch.nn as nn
model = nn.parallel.DistributedDataParallel(net, forward_sync_buffers=False)
(model(a) - model(b)).sum().backward()
)py";
  // 2.13 reads it; 2.12.0 has no such keyword (and would raise TypeError).
  EXPECT_TRUE(check(Source, "2.13.0").Findings.empty());
  EXPECT_EQ(check(Source, "2.12.0").Findings.size(), 1u);
}

TEST(PythonFrontend, EveryImportSpellingNamesTheClass) {
  for (const char *Source : {
           "import torch\nm = torch.nn.parallel.DistributedDataParallel(n)\n"
           "(m(a) + m(b)).sum().backward()\n",
           "import torch.nn.parallel.distributed as d\n"
           "m = d.DistributedDataParallel(n)\n(m(a) + m(b)).sum().backward()\n",
           "from torch.nn import parallel\n"
           "m = parallel.DistributedDataParallel(n)\n"
           "(m(a) + m(b)).sum().backward()\n",
       })
    EXPECT_EQ(check(Source).Findings.size(), 1u) << Source;
  // A class of the same name from elsewhere is not PyTorch's.
  EXPECT_TRUE(check("from mylib import DistributedDataParallel as DDP\n"
                    "m = DDP(n)\n(m(a) + m(b)).sum().backward()\n")
                  .Findings.empty());
}

TEST(PythonFrontend, SecondForwardUnderNoGradStillBroadcasts) {
  CheckResult R = check(R"py(
import torch
from torch.nn.parallel import DistributedDataParallel as DDP
def step(net, a, b):
    model = DDP(net)
    out = model(a)
    with torch.no_grad():
        target = model(b)
    (out - target).pow(2).sum().backward()
)py");
  ASSERT_EQ(R.Findings.size(), 1u);
  EXPECT_EQ(R.Findings[0].Function, "step");
  EXPECT_EQ(R.Findings[0].Second.Line, 8u);
}

TEST(PythonFrontend, FirstForwardUnderNoGradIsOk) {
  EXPECT_TRUE(check(R"py(
import torch
from torch.nn.parallel import DistributedDataParallel as DDP
model = DDP(net)
with torch.no_grad():
    target = model(b)
out = model(a)
(out - target).pow(2).sum().backward()
)py")
                  .Findings.empty());
}

TEST(PythonFrontend, DetachedOrBypassedForwardsAreOk) {
  EXPECT_TRUE(check(R"py(
from torch.nn.parallel import DistributedDataParallel as DDP
model = DDP(net)
target = model(b).detach()
out = model(a)
(out - target).pow(2).sum().backward()
)py")
                  .Findings.empty());
  // model.module runs the wrapped module: no broadcast.
  EXPECT_TRUE(check(R"py(
from torch.nn.parallel import DistributedDataParallel as DDP
model = DDP(net)
out = model(a)
other = model.module(b)
(out - other).pow(2).sum().backward()
)py")
                  .Findings.empty());
}

TEST(PythonFrontend, SelfAttributeFactoryAndParameter) {
  CheckResult R = check(R"py(
from torch.nn.parallel import DistributedDataParallel as DDP

class Trainer:
    def __init__(self, net):
        self.model = DDP(net)

    def step(self, a, b):
        loss = (self.model(a) - self.model(b)).sum()
        loss.backward()

def build(net):
    return DDP(net)

def train_step(model, a, b):
    out1 = model(a)
    out2 = model.forward(b)
    (out1 + out2).mean().backward()

def main():
    model = build(net)
    (model(a) * model(b)).sum().backward()
    train_step(model, a, b)
)py");
  ASSERT_EQ(R.Findings.size(), 3u);
  EXPECT_EQ(R.Findings[0].Object, "self.model");
  EXPECT_EQ(R.Findings[0].Function, "Trainer.step");
  EXPECT_EQ(R.Findings[0].Second.Line, 9u);
  EXPECT_EQ(R.Findings[1].Function, "train_step");
  EXPECT_EQ(R.Findings[1].Second.Line, 17u);
  EXPECT_EQ(R.Findings[2].Function, "main");
  EXPECT_EQ(R.Findings[2].Second.Line, 22u);
}

TEST(PythonFrontend, ComprehensionOfForwardsClobbersItsEarlierElements) {
  CheckResult R = check(R"py(
import torch
from torch.nn.parallel import DistributedDataParallel as DDP
model = DDP(net)
outs = [model(v) for v in views]
torch.stack(outs).sum().backward()
)py");
  ASSERT_EQ(R.Findings.size(), 1u);
  EXPECT_TRUE(R.Findings[0].SameForwardInALoop);
  EXPECT_EQ(R.Findings[0].Second.Line, 5u);
}

TEST(PythonFrontend, OutputsKeptInAListAreStillLive) {
  CheckResult R = check(R"py(
import torch
from torch.nn.parallel import DistributedDataParallel as DDP
model = DDP(net)
outs = []
for v in views:
    outs.append(model(v))
torch.stack(outs).sum().backward()
)py");
  ASSERT_EQ(R.Findings.size(), 1u);
  EXPECT_TRUE(R.Findings[0].SameForwardInALoop);
}

TEST(PythonFrontend, CompiledDDPIsStillDDP) {
  EXPECT_EQ(check(R"py(
import torch
from torch.nn.parallel import DistributedDataParallel as DDP
model = torch.compile(DDP(net))
(model(a) - model(b)).sum().backward()
)py")
                .Findings.size(),
            1u);
}

TEST(PythonFrontend, ForwardsInsideNoSyncDoNotBroadcastAfterTheFirst) {
  // DDP leaves require_forward_param_sync cleared after a forward in
  // no_sync(), as after a forward with grad mode off.
  EXPECT_TRUE(check(R"py(
from torch.nn.parallel import DistributedDataParallel as DDP
model = DDP(net)
with model.no_sync():
    out1 = model(a)
    out2 = model(b)
(out1 + out2).sum().backward()
)py")
                  .Findings.empty());
  // The first forward after the block broadcasts again.
  CheckResult R = check(R"py(
from torch.nn.parallel import DistributedDataParallel as DDP
model = DDP(net)
with model.no_sync():
    out1 = model(a)
out2 = model(b)
out3 = model(c)
(out1 + out2 + out3).sum().backward()
)py");
  ASSERT_EQ(R.Findings.size(), 1u);
  EXPECT_EQ(R.Findings[0].Second.Line, 7u);
}

TEST(PythonFrontend, AHelperCalledTwiceRunsTwoForwards) {
  CheckResult R = check(R"py(
from torch.nn.parallel import DistributedDataParallel as DDP

def encode(model, view):
    return model(view)

class Trainer:
    def __init__(self, net):
        self.model = DDP(net)
    def encode(self, view):
        return self.model(view)
    def step(self, a, b):
        (self.encode(a) - self.encode(b)).sum().backward()

def main(net, a, b):
    model = DDP(net)
    z1 = encode(model, a)
    z2 = encode(model=model, view=b)
    embed = lambda v: model(v)
    z3, z4 = list(map(model, [a, b]))
    (z1 + z2 + embed(a) + z3 + z4).sum().backward()
)py");
  ASSERT_EQ(R.Findings.size(), 4u);
  EXPECT_EQ(R.Findings[0].Function, "Trainer.step");
  EXPECT_EQ(R.Findings[0].Second.Line, 13u);
  EXPECT_EQ(R.Findings[0].Second.Column, 27u);
  // main: the keyword call, the map (each element), the lambda's call.
  EXPECT_EQ(R.Findings[1].Second.Line, 18u);
  EXPECT_EQ(R.Findings[2].Second.Line, 20u);
  EXPECT_EQ(R.Findings[3].Second.Line, 21u);
}

TEST(PythonFrontend, AFunctoolsPartialCallsItsFunctionWithTheBoundArguments) {
  CheckResult R = check(R"py(
import functools
from functools import partial
from torch.nn.parallel import DistributedDataParallel as DDP

def project(model, view):
    return model(view)

def main(net, a, b):
    model = DDP(net)
    bound = functools.partial(project, model)
    by_keyword = partial(project, model=model)
    unbound = partial(project)
    (bound(a) + by_keyword(view=b)).sum().backward()
    (bound(a) + unbound(model, b)).sum().backward()
    bound(a).sum().backward()
)py");
  ASSERT_EQ(R.Findings.size(), 2u);
  EXPECT_EQ(R.Findings[0].Second.Line, 14u);
  EXPECT_EQ(R.Findings[0].Second.Column, 17u);
  EXPECT_EQ(R.Findings[0].First.Line, 14u);
  EXPECT_EQ(R.Findings[1].Second.Line, 15u);
  EXPECT_EQ(R.Findings[1].Second.Column, 17u);
}

TEST(PythonFrontend, NamesImportedFromAnotherFileOfTheRunAreFollowed) {
  static const RuleSet Rules = RuleSet::builtin();
  CheckOptions Options;
  Options.Version = *TorchVersion::parse("2.11.0");
  const char Models[] = R"py(from torch.nn.parallel import DistributedDataParallel as DDP
from torchvision.models import resnet50

def build_model():
    return DDP(resnet50())
)py";
  const char Utils[] = R"py(def encode(model, x):
    return model(x)

def train_step(model, a, b):
    (model(a) + model(b)).sum().backward()
)py";
  const char Train[] = R"py(import utils
from models import build_model
from utils import encode, train_step

model = build_model()
(encode(model, a) + utils.encode(model, b)).sum().backward()
train_step(model, a, b)
)py";
  const char Nets[] = R"py(from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm1d(8)
)py";
  const char Run[] = R"py(from torch.nn.parallel import DistributedDataParallel as DDP
from . import nets
from .nets import Net

first = DDP(Net())
(first(a) + first(b)).sum().backward()
second = DDP(nets.Net())
(second(a) + second(b)).sum().backward()
)py";
  std::vector<CheckResult> R = checkSources(
      {SourceFile{"/src/models.py", Models, Options},
       SourceFile{"/src/utils.py", Utils, Options},
       SourceFile{"/src/train.py", Train, Options},
       SourceFile{"/src/pkg/__init__.py", "", Options},
       SourceFile{"/src/pkg/nets.py", Nets, Options},
       SourceFile{"/src/pkg/run.py", Run, Options}},
      Rules);
  ASSERT_EQ(R.size(), 6u);
  EXPECT_TRUE(R[0].Findings.empty());
  // The helper's two forwards, on the object train.py hands it.
  ASSERT_EQ(R[1].Findings.size(), 1u);
  EXPECT_EQ(R[1].Findings[0].Second.Line, 5u);
  EXPECT_EQ(R[1].Findings[0].ConstructionFile, "/src/models.py");
  EXPECT_EQ(R[1].Findings[0].Construction.Line, 5u);
  // The helper called twice, by name and through the module.
  ASSERT_EQ(R[2].Findings.size(), 1u);
  EXPECT_EQ(R[2].Findings[0].Second.Line, 6u);
  EXPECT_EQ(R[2].Findings[0].Second.Column, 21u);
  EXPECT_EQ(R[2].Findings[0].ConstructionFile, "/src/models.py");
  // Relative imports: the class has batch norm, no assumption is needed.
  ASSERT_EQ(R[5].Findings.size(), 2u);
  for (const Finding &F : R[5].Findings) {
    EXPECT_EQ(F.BuffersAssumption, "");
    EXPECT_EQ(F.ConstructionFile, "/src/pkg/run.py");
  }
  // On its own, train.py knows neither the factory nor the helpers.
  EXPECT_TRUE(check(Train).Findings.empty());
}

TEST(PythonFrontend, OneForwardPerBackwardIsOk) {
  EXPECT_TRUE(check(R"py(
from torch.nn.parallel import DistributedDataParallel as DDP
model = DDP(net)
for x, y in loader:
    if x is None:
        continue
    loss = criterion(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
)py")
                  .Findings.empty());
}

TEST(PythonFrontend, RetainGraphKeepsTheFirstGraphForALaterBackward) {
  CheckResult R = check(R"py(
from torch.nn.parallel import DistributedDataParallel as DDP
model = DDP(net)
out = model(a)
out.sum().backward(retain_graph=True)
other = model(b)
out.mean().backward()
)py");
  ASSERT_EQ(R.Findings.size(), 1u);
  EXPECT_EQ(R.Findings[0].Backward.Line, 7u);
}

TEST(PythonFrontend, HalfTypedCodeIsStillChecked) {
  // What an editor sends while a line is typed. (An unclosed bracket is
  // different: Python's grammar reads every later line into it.)
  CheckResult R = check(R"py(
from torch.nn.parallel import DistributedDataParallel as DDP
model = DDP(net)

def unfinished(x):
    y = x.
    if y

def step(a, b):
    out1 = model(a)
    out2 = model(b)
    (out1 + out2).sum().backward()
)py");
  ASSERT_FALSE(R.SyntaxErrors.empty());
  EXPECT_EQ(R.SyntaxErrors[0].Line, 6u);
  ASSERT_EQ(R.Findings.size(), 1u);
  EXPECT_EQ(R.Findings[0].Second.Line, 11u);
}

// Which modules have buffers, as far as the file shows.
CheckResult checkWrapping(const std::string &Definitions,
                          const std::string &Module) {
  return check("import torch\nimport torch.nn as nn\n"
               "import torchvision\nimport timm\n"
               "from torch.nn.parallel import DistributedDataParallel as DDP\n" +
               Definitions + "\nmodel = " + Module +
               "\nmodel = DDP(model)\n(model(a) + model(b)).sum().backward()\n");
}

TEST(PythonFrontendBuffers, LayersWithoutRunningStatisticsAreOk) {
  EXPECT_TRUE(checkWrapping("", "nn.Sequential(nn.Linear(4, 4), nn.ReLU())")
                  .Findings.empty());
  EXPECT_TRUE(checkWrapping("", "nn.BatchNorm1d(4, track_running_stats=False)")
                  .Findings.empty());
  EXPECT_TRUE(checkWrapping("", "nn.InstanceNorm2d(4)").Findings.empty());
  EXPECT_TRUE(
      checkWrapping("", "torchvision.models.vit_b_16()").Findings.empty());
}

TEST(PythonFrontendBuffers, BatchNormAndTorchvisionBuildersHaveThem) {
  for (const char *Module :
       {"nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))",
        "nn.InstanceNorm2d(4, track_running_stats=True)",
        "torchvision.models.resnet50().cuda(rank)"}) {
    CheckResult R = checkWrapping("", Module);
    ASSERT_EQ(R.Findings.size(), 1u) << Module;
    EXPECT_EQ(R.Findings[0].BuffersAssumption, "") << Module;
  }
}

TEST(PythonFrontendBuffers, TimmModelsByTheirMeasuredBuffers) {
  EXPECT_TRUE(checkWrapping("", "timm.create_model('vit_base_patch16_224')")
                  .Findings.empty());
  CheckResult R = checkWrapping("", "timm.create_model(\"resnet50\")");
  ASSERT_EQ(R.Findings.size(), 1u);
  EXPECT_EQ(R.Findings[0].BuffersAssumption, "");
  R = checkWrapping("", "timm.create_model(name)");
  ASSERT_EQ(R.Findings.size(), 1u);
  EXPECT_NE(R.Findings[0].BuffersAssumption.find("not a timm model"),
            std::string::npos);
}

TEST(PythonFrontendBuffers, ClassesOfTheFileAreFollowed) {
  const std::string Plain = R"py(
class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(10, 10)
        self.relu = nn.ReLU()
        self.scale = 2.0
        self.bias = nn.Parameter(torch.zeros(10))
)py";
  EXPECT_TRUE(checkWrapping(Plain, "Head()").Findings.empty());
  // A class that registers a buffer, and one that holds a class with batch
  // norm, through a base of the file.
  const std::string Buffered = Plain + R"py(
class Normalised(Head):
    def __init__(self):
        super().__init__()
        self.register_buffer("mean", torch.zeros(10))

class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8))
)py";
  for (const char *Module : {"Normalised()", "Encoder()"}) {
    CheckResult R = checkWrapping(Buffered, Module);
    ASSERT_EQ(R.Findings.size(), 1u) << Module;
    EXPECT_EQ(R.Findings[0].BuffersAssumption, "") << Module;
  }
}

TEST(PythonFrontendBuffers, BuffersOnlyAgainstTheInputAreSavedWhenItRequiresGrad) {
  const std::string Normalized = R"py(
class Normalized(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("mean", torch.zeros(8))
        self.register_buffer("std", torch.ones(8))
        self.net = nn.Linear(8, 4)
    def forward(self, x):
        h = x - self.mean
        return self.net(h / self.std)

class Scaled(Normalized):
    def forward(self, x):
        return self.net(x) * self.std

class Shifted(Normalized):
    def forward(self, x):
        h = self.net(x)
        return torch.add(h, self.mean)

a = torch.randn(4, 8)
b = (a + 0.1 * torch.randn_like(a)).cuda()
)py";
  // Inputs made by torch's factories do not require grad: the division
  // saves nothing.
  EXPECT_TRUE(checkWrapping(Normalized, "Normalized()").Findings.empty());
  // Against what derives from the parameters, the buffer is saved.
  for (const char *Module : {"Scaled()", "Shifted()",
                             "nn.Sequential(nn.Linear(8, 8), Normalized())"})
    EXPECT_EQ(checkWrapping(Normalized, Module).Findings.size(), 1u)
        << Module;
  // An input that may require grad (the output of another module, a loop
  // variable, a parameter) makes the normalisation save its buffers.
  CheckResult R = check(
      "import torch\nimport torch.nn as nn\n"
      "from torch.nn.parallel import DistributedDataParallel as DDP\n" +
      Normalized + R"py(
model = DDP(Normalized())
encoder = nn.Linear(8, 8)
(model(encoder(a)) + model(encoder(b))).sum().backward()
for c in loader:
    (model(c) + model(a)).sum().backward()
def step(d):
    (model(d) + model(a)).sum().backward()
)py");
  EXPECT_EQ(R.Findings.size(), 3u);
}

TEST(PythonFrontendBuffers, WhatCannotBeFollowedIsAssumedAndSaid) {
  CheckResult R =
      checkWrapping("", "AutoModel.from_pretrained('bert-base-uncased')");
  ASSERT_EQ(R.Findings.size(), 1u);
  EXPECT_EQ(R.Findings[0].BuffersAssumption,
            "'AutoModel.from_pretrained' is not a module the checker knows");
  R = checkWrapping("class Model(pl.LightningModule):\n    pass\n", "Model()");
  ASSERT_EQ(R.Findings.size(), 1u);
  EXPECT_EQ(R.Findings[0].BuffersAssumption,
            "'Model' derives from 'pl.LightningModule', which the checker "
            "does not follow");
}

TEST(PythonFrontendBuffers, WithoutTheAssumptionOnlyModulesShownToHaveThem) {
  static const RuleSet Rules = RuleSet::builtin();
  CheckOptions Options;
  Options.AssumeModulesHaveBuffers = false;
  auto Findings = [&](const std::string &Module) {
    return checkSource("from torch.nn.parallel import "
                       "DistributedDataParallel as DDP\nimport torch.nn as nn\n"
                       "model = DDP(" + Module +
                           ")\n(model(a) + model(b)).sum().backward()\n",
                       Rules, Options)
        .Findings.size();
  };
  EXPECT_EQ(Findings("AutoModel.from_pretrained('bert-base-uncased')"), 0u);
  EXPECT_EQ(Findings("nn.BatchNorm1d(4)"), 1u);
}

TEST(PythonFrontendSteps, AStepBetweenAForwardAndItsBackwardIsReported) {
  const std::string Gan = R"py(import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

G = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 4))
D = DDP(nn.Sequential(nn.Linear(4, 8), nn.LeakyReLU(), nn.Linear(8, 1)))
opt_g = torch.optim.Adam(G.parameters())
opt_d = OPTIMIZER
scaler = torch.amp.GradScaler()

def step(real, z):
    fake = G(z)
    d_fake = D(fake)
    loss_d = d_fake.mean() - D(real).mean()
    loss_d.backward(retain_graph=True)
    STEP
    loss_g = -d_fake.mean()
    loss_g.backward()
    opt_g.step()
)py";
  auto Check = [&](llvm::StringRef Optimizer, llvm::StringRef Step) {
    std::string Source = Gan;
    Source.replace(Source.find("OPTIMIZER"), 9, Optimizer.str());
    Source.replace(Source.find("STEP"), 4, Step.str());
    return check(Source).Steps;
  };
  // Every torch.optim step bumps the parameters, SGD's too (in Python).
  for (llvm::StringRef Optimizer : {"torch.optim.Adam(D.parameters(), lr=1e-3)",
                              "torch.optim.SGD(params=D.module.parameters())"}) {
    std::vector<StepFinding> Steps = Check(Optimizer, "opt_d.step()");
    ASSERT_EQ(Steps.size(), 1u) << Optimizer.str();
    EXPECT_EQ(Steps[0].Optimizer, "opt_d");
    EXPECT_EQ(Steps[0].Module, "D");
    EXPECT_EQ(Steps[0].Step.Line, 16u);
    EXPECT_EQ(Steps[0].Forward.Line, 13u);
    EXPECT_EQ(Steps[0].Backward.Line, 18u);
    EXPECT_FALSE(Steps[0].Assumed);
  }
  EXPECT_EQ(Check("torch.optim.Adam(D.parameters())", "scaler.step(opt_d)")
                .size(),
            1u);
  EXPECT_TRUE(Check("bnb.optim.Adam8bit(D.parameters())", "opt_d.step()")
                  .front()
                  .Assumed);
  // A fused step does not bump; a step after the last backward is fine.
  EXPECT_TRUE(
      Check("torch.optim.Adam(D.parameters(), fused=True)", "opt_d.step()")
          .empty());
  EXPECT_TRUE(Check("torch.optim.Adam(D.parameters())", "pass").empty());
}

TEST(PythonFrontendSteps, WhatTheForwardDidNotSaveIsNotReported) {
  // A lone Linear saves its weight only for an input requiring grad: D(real)
  // saves nothing, D(G(z)) does, D(G(z).detach()) does not; the generator's
  // step writes no parameter D's forward saved.
  CheckResult R = check(R"py(import torch
from torch import nn

G = nn.Linear(4, 4)
D = nn.Linear(4, 1)
opt_g = torch.optim.Adam(G.parameters())
opt_d = torch.optim.Adam(D.parameters())

def plain():
    d_real = D(torch.randn(5, 4))
    opt_d.step()
    d_real.sum().backward()

def generated():
    d_fake = D(G(torch.randn(5, 4)))
    opt_g.step()
    d_fake.sum().backward()

def detached():
    d_fake = D(G(torch.randn(5, 4)).detach())
    opt_d.step()
    d_fake.sum().backward()

def saved():
    d_fake = D(G(torch.randn(5, 4)))
    opt_d.step()
    d_fake.sum().backward()
)py");
  ASSERT_EQ(R.Steps.size(), 1u);
  EXPECT_EQ(R.Steps[0].Step.Line, 26u);
}

// In-place writes on values an operation saved
// (inplace-write-before-backward).

/// Applies a finding's out-of-place fix to Source.
std::string applied(std::string Source, const ValueWriteFinding &F) {
  std::vector<Edit> Edits = F.Fix;
  std::sort(Edits.begin(), Edits.end(), [](const Edit &A, const Edit &B) {
    return A.Offset > B.Offset;
  });
  for (const Edit &E : Edits)
    Source.replace(E.Offset, E.Length, E.Text);
  return Source;
}

const char GatedForward[] = R"py(import torch
from torch import nn

class Gated(nn.Module):
    def forward(self, x):
        h = torch.relu(self.fc(x))
        gate = torch.sigmoid(self.gate_fc(x))
        gate.mul_(2)
        return self.head(h * gate)
)py";

TEST(PythonValueWrites, AModulesForwardWritingASigmoidsResult) {
  CheckResult R = check(GatedForward);
  ASSERT_EQ(R.ValueWrites.size(), 1u);
  const ValueWriteFinding &F = R.ValueWrites[0];
  EXPECT_EQ(F.Operation, "mul_");
  EXPECT_EQ(F.Tensor, "gate");
  EXPECT_EQ(F.Saver, "torch.sigmoid(self.gate_fc(x))");
  EXPECT_EQ(F.Write.Line, 8u);
  EXPECT_EQ(F.Write.Column, 14u);
  EXPECT_EQ(F.Saved.Line, 7u);
  EXPECT_EQ(F.Backward.Line, 9u);
  EXPECT_TRUE(F.ThroughResult);
  EXPECT_EQ(F.FixWithheld, "");
  EXPECT_NE(applied(GatedForward, F).find("        gate = gate.mul(2)\n"),
            std::string::npos);
  // Outside a module's forward, no one backpropagates through it.
  std::string Plain = GatedForward;
  Plain.replace(Plain.find("(nn.Module)"), 11, "");
  EXPECT_TRUE(check(Plain).ValueWrites.empty());
}

TEST(PythonValueWrites, AugmentedAssignmentOnAnOperandAMultiplicationSaved) {
  const char Source[] = R"py(import torch

def step(model, fc, x):
    h = model(x)
    g = h * torch.sigmoid(fc(x))
    h += fc(g) - 1
    (h + g).sum().backward()
)py";
  CheckResult R = check(Source);
  ASSERT_EQ(R.ValueWrites.size(), 1u);
  const ValueWriteFinding &F = R.ValueWrites[0];
  EXPECT_EQ(F.Operation, "+=");
  EXPECT_EQ(F.Saver, "h * torch.sigmoid(fc(x))");
  EXPECT_EQ(F.Backward.Line, 7u);
  EXPECT_FALSE(F.ThroughResult);
  EXPECT_NE(applied(Source, F).find("    h = h + (fc(g) - 1)\n"),
            std::string::npos);
}

TEST(PythonValueWrites, ViewsHandlesAndIndexedAssignmentsWriteTheStorage) {
  CheckResult R = check(R"py(import torch
import torch.nn.functional as F

def step(model, x):
    p = F.softmax(model(x), dim=-1)
    q = p.view(-1)
    q[0] = 0
    a = torch.tanh(model(x))
    b = a
    b.t().clamp_(0, 1)
    c = torch.exp(model(x))
    torch.relu_(c.detach())
    (p.sum() + a.sum() + c.sum()).backward()
)py");
  ASSERT_EQ(R.ValueWrites.size(), 3u);
  EXPECT_EQ(R.ValueWrites[0].Operation, "q[0] = 0");
  EXPECT_NE(R.ValueWrites[0].FixWithheld.find("writes part of 'q'"),
            std::string::npos);
  EXPECT_EQ(R.ValueWrites[1].Operation, "clamp_");
  EXPECT_NE(R.ValueWrites[1].FixWithheld.find("not a tensor variable"),
            std::string::npos);
  EXPECT_EQ(R.ValueWrites[2].Operation, "torch.relu_");
  EXPECT_NE(R.ValueWrites[2].FixWithheld.find("no out-of-place spelling"),
            std::string::npos);
}

TEST(PythonValueWrites, NewTensorsAndValuesThatRequireNoGradAreOk) {
  CheckResult R = check(R"py(import torch

def step(model, x, data):
    gate = torch.sigmoid(model(x))
    gate = gate * 2
    gate.add_(1)
    h = torch.relu(model(x)).clone()
    h[0] = 0
    w = torch.sigmoid(torch.randn(3))
    w.mul_(2)
    with torch.no_grad():
        s = torch.sigmoid(model(x))
    s.mul_(2)
    (gate + h + w).sum().backward()
)py");
  EXPECT_TRUE(R.ValueWrites.empty());
}

TEST(PythonValueWrites, InPlaceModulesWriteTheirInput) {
  const char Source[] = R"py(import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.act = nn.ReLU(inplace=True)

    def forward(self, x):
        h = self.act(self.fc(x))
        return self.act(torch.sigmoid(h))
)py";
  CheckResult R = check(Source);
  ASSERT_EQ(R.ValueWrites.size(), 1u);
  EXPECT_EQ(R.ValueWrites[0].Operation, "self.act");
  EXPECT_EQ(R.ValueWrites[0].Write.Line, 12u);
  EXPECT_TRUE(R.ValueWrites[0].ThroughResult);
}

TEST(PythonValueWrites, TheFixIsWithheldWhereItWouldChangeWhatIsComputed) {
  auto Withheld = [](const char *Body) {
    std::string Source = std::string("import torch\n\ndef step(model, x, w):\n") +
                         Body + "    (w + z).sum().backward()\n";
    CheckResult R = check(Source);
    EXPECT_EQ(R.ValueWrites.size(), 1u) << Source;
    return R.ValueWrites.empty() ? std::string()
                                 : R.ValueWrites[0].FixWithheld;
  };
  // A parameter: the caller's tensor would keep its old values.
  EXPECT_NE(Withheld("    z = x * w\n    x.mul_(2)\n")
                .find("not a tensor variable of this function"),
            std::string::npos);
  // A handle taken before the write.
  EXPECT_NE(Withheld("    y = torch.sigmoid(model(x))\n    keep = y\n"
                     "    z = keep * 1\n    y.mul_(2)\n")
                .find("may share its storage with another tensor at line 5"),
            std::string::npos);
  // The write's value is used.
  EXPECT_NE(Withheld("    y = torch.sigmoid(model(x))\n    z = y.mul_(2)\n")
                .find("the value of 'mul_' is used"),
            std::string::npos);
  // No out-of-place twin with the same arguments.
  EXPECT_NE(Withheld("    y = torch.sigmoid(model(x))\n    z = y * 1\n"
                     "    y.zero_()\n")
                .find("torch.Tensor has no 'zero'"),
            std::string::npos);
}

TEST(PythonValueWrites, OtherChecksDoNotSeeTheForwardsResultBackward) {
  // A module's forward gains a backward at its return for value writes
  // only: a DDP object's two forwards in it are no finding there.
  CheckResult R = check(R"py(import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

class Outer(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = DDP(nn.BatchNorm1d(4))

    def forward(self, x):
        return self.inner(x) + self.inner(x)
)py");
  EXPECT_TRUE(R.Findings.empty());
  EXPECT_TRUE(R.ValueWrites.empty());
}

TEST(PythonValueWrites, InPlaceOperationsSaveTheirOwnResult) {
  // relu_, torch.relu_, F.relu(inplace=True) and nn.ReLU(inplace=True) save
  // the tensor they wrote, as relu does its result; each write after them
  // fails (measured on torch 2.11.0), and the out-of-place spelling trains.
  const char Source[] = R"py(import torch
import torch.nn.functional as F
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.act = nn.ReLU(inplace=True)

    def forward(self, x):
        h = self.fc(x)
        h.relu_()
        h.mul_(2)
        a = self.act(self.fc(x))
        a += 1
        b = F.relu(self.fc(x), inplace=True)
        b[0] = 0
        d = self.fc(x)
        torch.relu_(d)
        d.div_(2)
        return h + a + b + d
)py";
  CheckResult R = check(Source);
  ASSERT_EQ(R.ValueWrites.size(), 4u);
  EXPECT_EQ(R.ValueWrites[0].Saver, "h.relu_()");
  EXPECT_EQ(R.ValueWrites[1].Saver, "self.act(self.fc(x))");
  EXPECT_EQ(R.ValueWrites[2].Saver, "F.relu(self.fc(x), inplace=True)");
  EXPECT_EQ(R.ValueWrites[3].Saver, "torch.relu_(d)");
  // Written in place as a statement, the tensor keeps no other handle; made
  // from a temporary, it shares its storage with no other name.
  std::string Fixed = Source;
  for (auto It = R.ValueWrites.rbegin(); It != R.ValueWrites.rend(); ++It)
    if (It->FixWithheld.empty())
      Fixed = applied(Fixed, *It);
  EXPECT_NE(Fixed.find("        h = h.mul(2)\n"), std::string::npos);
  EXPECT_NE(Fixed.find("        a = a + 1\n"), std::string::npos);
  EXPECT_NE(Fixed.find("        d = d.div(2)\n"), std::string::npos);
  EXPECT_NE(R.ValueWrites[2].FixWithheld.find("writes part of 'b'"),
            std::string::npos);
}

TEST(PythonValueWrites, LeavesThatRequireGradAndModulesThatSaveTheirOutput) {
  // A leaf made with requires_grad=True makes exp save its result; a
  // Sequential ending in ReLU saves its output (the ReLU's result), a DDP
  // object wrapping one too; one ending in a Linear does not.
  CheckResult R = check(R"py(import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

w = torch.randn(4, requires_grad=True)
e = torch.exp(w)
e += 1
net = nn.Sequential(nn.Linear(4, 6), nn.ReLU())
h = net(x)
h[:, 0] = 0.0
wrapped = DDP(net)
g = wrapped(x)
g.mul_(2)
lin = nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 6))
k = lin(x)
k[:, 0] = 0.0
(e.sum() + h.sum() + g.sum() + k.sum()).backward()
)py");
  ASSERT_EQ(R.ValueWrites.size(), 3u);
  EXPECT_EQ(R.ValueWrites[0].Saver, "torch.exp(w)");
  EXPECT_EQ(R.ValueWrites[1].Saver, "net(x)");
  EXPECT_EQ(R.ValueWrites[1].Operation, "h[:, 0] = 0.0");
  EXPECT_EQ(R.ValueWrites[2].Saver, "wrapped(x)");
}

} // namespace
