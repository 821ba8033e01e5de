// A free helper that takes the DDP model by reference and returns a
// normalised embedding; the training loop calls it for the query and the
// document of each pair before one backward.
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

#include <cstdio>

struct NetImpl : torch::nn::Module {
  NetImpl()
      : fc1(register_module("fc1", torch::nn::Linear(8, 16))),
        bn(register_module("bn", torch::nn::BatchNorm1d(16))),
        fc2(register_module("fc2", torch::nn::Linear(16, 5))) {}
  torch::Tensor forward(torch::Tensor x) { return fc2(torch::relu(bn(fc1(x)))); }
  torch::nn::Linear fc1;
  torch::nn::BatchNorm1d bn;
  torch::nn::Linear fc2;
};
TORCH_MODULE(Net);

static torch::Tensor embed(ddpguard::DistributedDataParallel<Net> &model, const torch::Tensor &x) {
  return torch::nn::functional::normalize(model(x));
}

int main() {
  auto pg = ddpguard::init_process_group_from_env("gloo");
  torch::manual_seed(0);
  Net net;
  ddpguard::DistributedDataParallel<Net> model(net, pg);
  torch::optim::SGD optimizer(model.module()->parameters(), 0.05);
  torch::manual_seed(2100 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    auto queries = torch::randn({8, 8});
    auto documents = queries + 0.2 * torch::randn_like(queries);
    optimizer.zero_grad();
    auto q = embed(model, queries);
    auto d = embed(model, documents); // corpus: expect here
    auto loss = torch::nn::functional::cross_entropy(torch::matmul(q, d.t()) / 0.1,
                                                     torch::arange(8));
    loss.backward();
    optimizer.step();
    std::printf("rank %d step %d loss %.4f\n", pg->getRank(), step, loss.item<float>());
  }
  return 0;
}
