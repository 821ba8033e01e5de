//===- PythonOptimizerTest.cpp - what an optimizer's step writes ----------===//
//
// A step writes exactly the parameters its optimizer was built over: a part
// of a model, parameter groups, chain(...), list + list, filter(...), a
// comprehension (issue 28, construct 4).
//
//===----------------------------------------------------------------------===//

#include "PythonFrontend/PythonFrontend.h"
#include "gtest/gtest.h"
#include <string>

using namespace ddpguard;
using namespace ddpguard::python;

namespace {

CheckResult check(const std::string &Source) {
  static const RuleSet Rules = RuleSet::builtin();
  CheckOptions Options;
  Options.Version = *TorchVersion::parse("2.11.0");
  return checkSource(Source, Rules, Options);
}

// G and D, a VAE-like net with two parts, and a loop where the optimizer
// built from Params steps between a forward (line 21) and its backward. A
// Linear saves its weight only when its input requires grad.
std::string gan(const std::string &Params, const std::string &Forward) {
  return R"py(import itertools
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Linear(4, 4)
        self.decoder = nn.Linear(4, 4)

    def forward(self, x):
        return self.decoder(self.encoder(x))


net = Net()
g = nn.Linear(4, 4)
d = nn.Linear(4, 4)
opt = torch.optim.Adam()py" +
         Params + R"py()
for x in loader:
    y = )py" + Forward + R"py(
    opt.step()
    y.sum().backward()
)py";
}

void expectStep(const std::string &Params, const std::string &Forward,
                bool Reported) {
  SCOPED_TRACE(Params + " / " + Forward);
  CheckResult R = check(gan(Params, Forward));
  ASSERT_EQ(R.Steps.size(), Reported ? 1u : 0u);
  if (Reported) {
    EXPECT_EQ(R.Steps[0].Step.Line, 22u);
    EXPECT_EQ(R.Steps[0].Forward.Line, 21u);
  }
}

TEST(PythonOptimizer, APartOfAModel) {
  expectStep("params=net.encoder.parameters()", "net(x)", true);
  expectStep("net.decoder.parameters()", "net(x)", true);
}

TEST(PythonOptimizer, SeveralModules) {
  expectStep("itertools.chain(g.parameters(), d.parameters())", "d(g(x))",
             true);
  expectStep("list(g.parameters()) + list(d.parameters())", "d(g(x))", true);
  expectStep("[{'params': g.parameters()}, {'params': d.parameters(), "
             "'lr': 1e-3}]",
             "d(g(x))", true);
}

TEST(PythonOptimizer, FiltersAndComprehensions) {
  expectStep("filter(lambda p: p.requires_grad, d.parameters())", "d(g(x))",
             true);
  expectStep("[p for p in d.parameters() if p.requires_grad]", "d(g(x))",
             true);
}

TEST(PythonOptimizer, OtherModulesAreNotWritten) {
  // d's first forward saves no weight (its input needs no grad); the second
  // saves d's weight, which these optimizers do not step.
  expectStep("itertools.chain(g.parameters(), net.parameters())", "d(d(x))",
             false);
  expectStep("[{'params': g.parameters()}]", "d(d(x))", false);
  expectStep("[{'params': d.parameters()}]", "d(d(x))", true);
}

} // namespace

namespace {

TEST(PythonOptimizer, TupleTargetsBindElementWise) {
  CheckResult R = check(R"py(import torch
import torch.nn as nn

g, d = nn.Linear(4, 4), nn.Linear(4, 4)
opt_g, opt_d = torch.optim.Adam(g.parameters()), torch.optim.Adam(d.parameters())
for x in loader:
    y = d(g(x))
    opt_g.step()
    opt_d.step()
    y.sum().backward()
)py");
  // Both steps write what the forward saved (g's input needs no grad, but
  // g's result does: d saves its weight; g saves x only).
  ASSERT_EQ(R.Steps.size(), 1u);
  EXPECT_EQ(R.Steps[0].Optimizer, "opt_d");
  EXPECT_EQ(R.Steps[0].Step.Line, 9u);
}

} // namespace

namespace {

TEST(PythonOptimizer, ModulesAndOptimizersPassedToAHelper) {
  // The helper's parameters are bound from its calls: the module it runs is
  // the one its optimizer was built over, under another name.
  CheckResult R = check(R"py(import torch
import torch.nn as nn


def optimize(data, model, optimizer):
    out = model(data)
    optimizer.step()
    out.sum().backward()


net = nn.Linear(4, 4)
other = nn.Linear(4, 4)
head = nn.Linear(4, 4)
opt = torch.optim.Adam(net.parameters())
opt_other = torch.optim.Adam(other.parameters())
for x in loader:
    optimize(head(x), net, opt)
    optimize(head(x), net, optimizer=opt_other)
)py");
  ASSERT_EQ(R.Steps.size(), 1u);
  EXPECT_EQ(R.Steps[0].Step.Line, 7u);
  EXPECT_EQ(R.Steps[0].Module, "net");
}

} // namespace

namespace {

TEST(PythonOptimizer, SelfAttributesOfBasesSubclassesAndConstructors) {
  // SAC's critic step between the forward of the actor's loss through the
  // critic and its backward: the optimizer is set in a base class's method
  // over self.q, which the subclass's __init__ binds to its parameter, which
  // the construction SAC(q, ...) binds to a Linear.
  CheckResult R = check(R"py(import torch
import torch.nn as nn


class Base:
    def setup(self):
        self.opt_q = torch.optim.Adam(self.q.parameters())


class SAC(Base):
    def __init__(self, q, pi, pi_optim):
        self.q = q
        self.pi = pi
        self.pi_optim = pi_optim
        self.setup()

    def learn(self, obs):
        q_loss = self.q(self.pi(obs)).mean()
        pi_loss = -self.q(self.pi(obs)).mean()
        self.opt_q.zero_grad()
        q_loss.backward(retain_graph=True)
        self.opt_q.step()
        self.pi_optim.zero_grad()
        pi_loss.backward()
        self.pi_optim.step()


q = nn.Linear(4, 1)
pi = nn.Linear(4, 4)
agent = SAC(q, pi, torch.optim.Adam(pi.parameters()))
)py");
  ASSERT_EQ(R.Steps.size(), 1u);
  EXPECT_EQ(R.Steps[0].Optimizer, "self.opt_q");
  EXPECT_EQ(R.Steps[0].Step.Line, 22u);
  EXPECT_EQ(R.Steps[0].Forward.Line, 19u);
  EXPECT_EQ(R.Steps[0].Module, "q");
}

} // namespace

namespace {

TEST(PythonOptimizer, FactoriesOfModulesAndOptimizers) {
  // G, D = build_gan(): D is the factory's second module; make_opt(D) is an
  // optimizer over it (issue 28, construct 5).
  CheckResult R = check(R"py(import torch
import torch.nn as nn


def build_gan():
    g = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    d = nn.Sequential(nn.Linear(4, 4), nn.LeakyReLU(), nn.Linear(4, 1))
    return g, d


def make_opt(net):
    return torch.optim.Adam(net.parameters())


G, D = build_gan()
opt_d = make_opt(D)
opt_g = make_opt(G)
for z in loader:
    fake = G(z)
    d_loss = D(fake.detach()).mean()
    g_loss = -D(fake).mean()
    d_loss.backward()
    opt_d.step()
    g_loss.backward()
    opt_g.step()
)py");
  ASSERT_EQ(R.Steps.size(), 1u);
  EXPECT_EQ(R.Steps[0].Optimizer, "opt_d");
  EXPECT_EQ(R.Steps[0].Step.Line, 23u);
  EXPECT_EQ(R.Steps[0].Forward.Line, 21u);
}

} // namespace
