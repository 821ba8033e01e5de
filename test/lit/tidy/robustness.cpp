// Half-written code, as clangd sees it while typing (RecoveryExpr, unfinished
// statements, dependent templates, macros): no crash, no hang, and the
// functions that do parse are still checked.
// RUN: %not %clang_tidy --load=%tidy_plugin -checks='-*,ddp-multiple-forward-before-backward' %s -- %mock_flags 2>&1 | %FileCheck %s --implicit-check-not="Stack dump" --implicit-check-not=PLEASE
// RUN: %expect_exit 2 %ddpguard %s -- %mock_flags 2>&1 | %FileCheck %s --check-prefix=CLI --implicit-check-not="Stack dump"
#include <nets.h>

#define FORWARD_TWICE(D, A, B) (D(A) + D(B))

void recovery(Net net, PG pg, torch::Tensor a) {
  DDP d(net, pg);
  auto o1 = d(a, undeclared);
  auto o2 = d(a).nonexistent();
  (o1 + o2).sum().backward();
}

template <typename M> void dependent(ddpguard::DistributedDataParallel<M> &d,
                                     torch::Tensor a, typename M::Input b) {
  auto o1 = d(a);
  auto o2 = d(b);
  (o1 + o2).sum().backward();
}

void throughMacro(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg);
  FORWARD_TWICE(d, a, b).sum().backward();
}

void stillChecked(Net net, PG pg, torch::Tensor a, torch::Tensor b) {
  DDP d(net, pg);
  auto o1 = d(a);
  auto o2 = d(b);
  (o1 + o2).sum().backward();
}
// CHECK-DAG: :[[@LINE-3]]:13: warning: forward call on DDP-wrapped 'd' before the backward of the forward at line [[@LINE-4]]
// CHECK-DAG: :[[@LINE-10]]:17: warning: forward call on DDP-wrapped 'd' before the backward of the forward at line [[@LINE-10]]
// CHECK-DAG: error: use of undeclared identifier 'undeclared'
// CLI: does not parse: {{.*}}robustness.cpp:{{[0-9]+}}:{{[0-9]+}}: use of undeclared identifier 'undeclared'

void unfinished(Net net, PG pg, torch::Tensor a) {
  DDP d(net, pg);
  auto o1 = d(a);
  auto o2 = d(
}
