"""FactorVAE loss object: call_optimize(data, model, optimizer) steps the VAE's
optimizer (a parameter) after a retain_graph backward, then the
discriminator's loss reuses d_z = D(z), z from the VAE's forward, and
backpropagates through the stepped encoder (YannDubs/disentangling-vae#62)."""
import torch
import torch.nn.functional as F
from torch import nn

from repro_support import main


class FactorLoss:
    def __init__(self):
        self.discriminator = nn.Sequential(nn.Linear(4, 8), nn.LeakyReLU(0.2), nn.Linear(8, 2))
        self.optimizer_d = torch.optim.Adam(self.discriminator.parameters())

    def call_optimize(self, data, model, optimizer):
        first, second = data.split(data.size(0) // 2)
        latent = model(first)
        d_z = self.discriminator(latent)
        vae_loss = latent.pow(2).mean() + (d_z[:, 0] - d_z[:, 1]).mean()
        optimizer.zero_grad()
        vae_loss.backward(retain_graph=True)
        optimizer.step()
        d_z_perm = self.discriminator(model(second).detach().flip(0))
        ones = torch.ones(first.size(0), dtype=torch.long)
        d_tc_loss = 0.5 * (F.cross_entropy(d_z, torch.zeros_like(ones)) + F.cross_entropy(d_z_perm, ones))
        self.optimizer_d.zero_grad()
        d_tc_loss.backward()
        self.optimizer_d.step()


def step():
    encoder = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 4))
    FactorLoss().call_optimize(torch.randn(8, 6), encoder, torch.optim.Adam(encoder.parameters()))


if __name__ == "__main__":
    main(step)
