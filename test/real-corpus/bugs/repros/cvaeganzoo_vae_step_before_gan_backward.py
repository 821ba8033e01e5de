"""VAE-GAN: the VAE steps on its reconstruction loss after a retain_graph
backward; the adversarial loss on the same reconstruction, D(recon), then
backpropagates through the stepped VAE
(YixinChen-AI/CVAE-GAN-zoos-PyTorch-Beginner#1)."""
import torch
from torch import nn

from repro_support import main


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Linear(6, 8)
        self.decoder = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 6), nn.Sigmoid())

    def forward(self, x):
        mean, logstd = self.encoder(x).chunk(2, dim=1)
        z = mean + torch.randn_like(mean) * logstd.exp()
        return self.decoder(z), mean, logstd


def step():
    vae, D = VAE(), nn.Sequential(nn.Linear(6, 1), nn.Sigmoid())
    optimizerVAE = torch.optim.Adam(vae.parameters())
    criterion = nn.BCELoss()
    data = torch.rand(4, 6)
    recon_data, mean, logstd = vae(data)
    vae.zero_grad()
    vae_loss = criterion(recon_data, data) - 0.5 * torch.mean(1 + 2 * logstd - mean.pow(2) - (2 * logstd).exp())
    vae_loss.backward(retain_graph=True)
    optimizerVAE.step()
    vae.zero_grad()
    errVAE = criterion(D(recon_data).view(-1), torch.ones(4))
    errVAE.backward()
    optimizerVAE.step()


if __name__ == "__main__":
    main(step)
