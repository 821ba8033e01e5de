"""Relativistic GAN with a DDP-wrapped discriminator (BatchNorm inside) held
by a model object: the discriminator's step runs D(real) and D(fake) and one
backward of both; DDP's buffer broadcast before the second forward
overwrites the running statistics the first saved
(XPixelGroup/BasicSR#278)."""
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from repro_support import main_ddp


class GanModel:
    def __init__(self):
        self.net_g = nn.Conv2d(3, 3, 3, padding=1)
        self.net_d = DistributedDataParallel(
            nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.LeakyReLU(0.2), nn.Conv2d(4, 1, 3)))
        self.optimizer_d = torch.optim.Adam(self.net_d.parameters())

    def optimize_parameters(self, lq, gt):
        output = self.net_g(lq)
        self.optimizer_d.zero_grad()
        real_d_pred = self.net_d(gt)
        fake_d_pred = self.net_d(output.detach())
        l_d_real = F.softplus(-(real_d_pred - fake_d_pred.mean())).mean()
        l_d_fake = F.softplus(fake_d_pred - real_d_pred.mean()).mean()
        ((l_d_real + l_d_fake) / 2).backward()
        self.optimizer_d.step()


def step(rank):
    GanModel().optimize_parameters(torch.randn(2, 3, 8, 8), torch.randn(2, 3, 8, 8))


if __name__ == "__main__":
    main_ddp(step)
