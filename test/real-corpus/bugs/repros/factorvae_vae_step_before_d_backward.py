"""FactorVAE solver: the VAE's optimizer steps after a retain_graph backward;
the discriminator's loss then reuses D(z), z from the VAE's forward, and
backpropagates through the stepped VAE (1Konny/FactorVAE#15)."""
import torch
import torch.nn.functional as F
from torch import nn

from repro_support import main


class Solver:
    def __init__(self):
        self.VAE = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 4))
        self.optim_VAE = torch.optim.Adam(self.VAE.parameters())
        self.D = nn.Sequential(nn.Linear(4, 8), nn.LeakyReLU(0.2), nn.Linear(8, 2))
        self.optim_D = torch.optim.Adam(self.D.parameters())

    def train(self, x1, x2):
        z = self.VAE(x1)
        D_z = self.D(z)
        vae_loss = z.pow(2).mean() + (D_z[:, :1] - D_z[:, 1:]).mean()
        self.optim_VAE.zero_grad()
        vae_loss.backward(retain_graph=True)
        self.optim_VAE.step()
        D_z_pperm = self.D(self.VAE(x2).flip(0).detach())
        ones = torch.ones(x1.size(0), dtype=torch.long)
        D_tc_loss = 0.5 * (F.cross_entropy(D_z, torch.zeros_like(ones)) + F.cross_entropy(D_z_pperm, ones))
        self.optim_D.zero_grad()
        D_tc_loss.backward()
        self.optim_D.step()


def step():
    Solver().train(torch.randn(4, 6), torch.randn(4, 6))


if __name__ == "__main__":
    main(step)
