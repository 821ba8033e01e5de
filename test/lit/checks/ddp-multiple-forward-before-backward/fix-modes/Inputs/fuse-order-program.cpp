// A program whose forwards take arguments with observable side effects: each
// next_batch() returns a batch filled with its call number. --fix-mode=fuse
// must keep the order, so that o1 gets batch 1 and o2 batch 2, whatever order
// the compiler evaluates a call's arguments in (GCC: right to left).
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>
#include <cstdio>

// Its output is its input; the BatchNorm (buffers, saved for backward) is
// what makes several forwards before one backward a hazard.
struct EchoImpl : torch::nn::Module {
  EchoImpl() : bn(register_module("bn", torch::nn::BatchNorm1d(4))) {}
  torch::Tensor forward(torch::Tensor x) { return x + 0 * bn(x); }
  torch::nn::BatchNorm1d bn;
};
TORCH_MODULE(Echo);

static int calls = 0;
torch::Tensor next_batch() {
  ++calls;
  return torch::full({2, 4}, static_cast<float>(calls));
}

static int batchOf(const torch::Tensor &t) {
  return static_cast<int>(t[0][0].item<float>());
}

int main() {
  auto group = ddpguard::init_process_group_from_env("gloo");
  torch::manual_seed(0);
  ddpguard::DistributedDataParallel<Echo> d(Echo(), group);

  // Declarations with plain 'auto'.
  auto o1 = d(next_batch());
  auto o2 = d(next_batch());
  (o1 + o2).sum().backward();
  std::printf("auto: o1 got batch %d, o2 got batch %d\n", batchOf(o1), batchOf(o2));

  // Declared types, and a plain variable between calls.
  torch::Tensor fixed = torch::full({2, 4}, 100.0f);
  torch::Tensor p1 = d(next_batch());
  torch::Tensor p2 = d(fixed);
  torch::Tensor p3 = d(next_batch());
  (p1 + p2 + p3).sum().backward();
  std::printf("typed: p1 got batch %d, p2 got batch %d, p3 got batch %d\n",
              batchOf(p1), batchOf(p2), batchOf(p3));

  // Assignments.
  torch::Tensor q1, q2;
  q1 = d(next_batch());
  q2 = d(next_batch());
  (q1 + q2).sum().backward();
  std::printf("assigned: q1 got batch %d, q2 got batch %d\n", batchOf(q1), batchOf(q2));
  return 0;
}
