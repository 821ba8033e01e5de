// Adversarial domain adaptation with a separate domain-classifier optimiser
// instead of a gradient-reversal layer: the DDP feature extractor embeds a
// source and a target batch, the domain classifier's loss is backpropagated
// with retain_graph=true and its optimiser steps, then the extractor's loss
// (task loss minus the domain loss) backpropagates through the same domain
// classifier forward. That forward saved the classifier's weights (the
// features require grad), and Adam's step wrote them.
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

#include <cstdio>

struct ExtractorImpl : torch::nn::Module {
  ExtractorImpl()
      : fc1(register_module("fc1", torch::nn::Linear(12, 32))),
        fc2(register_module("fc2", torch::nn::Linear(32, 16))) {}
  torch::Tensor forward(torch::Tensor x) { return torch::relu(fc2(torch::relu(fc1(x)))); }
  torch::nn::Linear fc1;
  torch::nn::Linear fc2;
};
TORCH_MODULE(Extractor);

int main() {
  auto pg = ddpguard::init_process_group_from_env("gloo");
  torch::manual_seed(0);
  Extractor extractorNet;
  ddpguard::DistributedDataParallel<Extractor> extractor(extractorNet, pg);
  torch::nn::Linear taskHead(16, 3);
  torch::nn::Sequential domainClf(torch::nn::Linear(16, 16), torch::nn::ReLU(), torch::nn::Linear(16, 1));
  std::vector<torch::Tensor> paramsF = extractor.module()->parameters();
  for (auto &p : taskHead->parameters())
    paramsF.push_back(p);
  torch::optim::Adam optF(paramsF, 1e-3);
  torch::optim::Adam optDom(domainClf->parameters(), 1e-3);
  const double lambda = 0.1;
  torch::manual_seed(1910 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    auto source = torch::randn({6, 12});
    auto labels = torch::randint(0, 3, {6});
    auto target = torch::randn({6, 12}) + 0.5;
    auto feats = extractor(torch::cat({source, target}));
    auto taskLoss = torch::nn::functional::cross_entropy(taskHead(feats.narrow(0, 0, 6)), labels);
    auto domainLogits = domainClf->forward(feats);
    auto domainLabels = torch::cat({torch::zeros({6, 1}), torch::ones({6, 1})});
    auto lossDom = torch::binary_cross_entropy_with_logits(domainLogits, domainLabels);
    optDom.zero_grad();
    lossDom.backward({}, /*retain_graph=*/true);
    optDom.step(); // corpus: expect here
    auto lossF = taskLoss - lambda * lossDom;
    optF.zero_grad();
    lossF.backward();
    optF.step();
    std::printf("rank %d step %d task %.4f domain %.4f\n", pg->getRank(), step,
                taskLoss.item<float>(), lossDom.item<float>());
  }
  return 0;
}
