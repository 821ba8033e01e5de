// FactorVAE as its fixed implementations write it: the VAE's loss is
// backpropagated and the VAE steps first; the discriminator then scores
// the latent codes detached (D(z.detach())) and permuted codes of a second
// batch, so its backward stops at the codes and never reaches the encoder
// that the VAE's step wrote. Trains.
#include <ddpguard/runtime/DistributedDataParallel.h>
#include <torch/torch.h>

#include <cstdio>

struct VAEImpl : torch::nn::Module {
  VAEImpl()
      : enc1(register_module("enc1", torch::nn::Linear(16, 32))),
        enc2(register_module("enc2", torch::nn::Linear(32, 8))),
        dec(register_module("dec", torch::nn::Linear(4, 16))) {}
  std::tuple<torch::Tensor, torch::Tensor, torch::Tensor, torch::Tensor> forward(torch::Tensor x) {
    auto h = enc2(torch::relu(enc1(x)));
    auto mu = h.narrow(1, 0, 4);
    auto logvar = h.narrow(1, 4, 4);
    auto z = mu + torch::randn_like(mu) * torch::exp(0.5 * logvar);
    return {dec(z), mu, logvar, z};
  }
  torch::nn::Linear enc1, enc2, dec;
};
TORCH_MODULE(VAE);

// Permutes each latent dimension independently across the batch.
torch::Tensor permuteDims(const torch::Tensor &z) {
  std::vector<torch::Tensor> cols;
  for (int64_t j = 0; j < z.size(1); ++j)
    cols.push_back(z.select(1, j).index_select(0, torch::randperm(z.size(0))));
  return torch::stack(cols, 1);
}

int main() {
  auto pg = ddpguard::init_process_group_from_env("gloo");
  torch::manual_seed(0);
  VAE vae;
  torch::nn::Sequential D(torch::nn::Linear(4, 32),
                          torch::nn::LeakyReLU(torch::nn::LeakyReLUOptions().negative_slope(0.2)),
                          torch::nn::Linear(32, 2));
  torch::optim::Adam optVAE(vae->parameters(), 1e-3);
  torch::optim::Adam optD(D->parameters(), torch::optim::AdamOptions(1e-4).betas({0.5, 0.9}));
  const double gamma = 6.4;
  torch::manual_seed(1900 + pg->getRank());
  for (int step = 0; step < 3; ++step) {
    auto x = torch::rand({8, 16});
    auto x2 = torch::rand({8, 16});
    auto [recon, mu, logvar, z] = vae(x);
    auto Dz = D->forward(z);
    auto tc = (Dz.select(1, 0) - Dz.select(1, 1)).mean();
    auto kld = -0.5 * (1 + logvar - mu.pow(2) - logvar.exp()).sum(1).mean();
    auto vaeLoss = torch::mse_loss(recon, x) + kld + gamma * tc;
    optVAE.zero_grad();
    vaeLoss.backward();
    optVAE.step();

    auto z2 = std::get<3>(vae(x2));
    auto DzDetached = D->forward(z.detach());
    auto DzPerm = D->forward(permuteDims(z2.detach()));
    auto zeros = torch::zeros({8}, torch::kLong);
    auto ones = torch::ones({8}, torch::kLong);
    auto lossD = 0.5 * (torch::nn::functional::cross_entropy(DzDetached, zeros) +
                        torch::nn::functional::cross_entropy(DzPerm, ones));
    optD.zero_grad();
    lossD.backward();
    optD.step();
    std::printf("rank %d step %d vae %.4f D %.4f\n", pg->getRank(), step, vaeLoss.item<float>(),
                lossD.item<float>());
  }
  return 0;
}
