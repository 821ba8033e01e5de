"""A trainer's discriminator (BatchNorm inside) is wrapped in DDP (there by
accelerate's prepare under a multi-process launch); the discriminator step
runs D(fake), D(real) and a gradient-penalty forward in a method, then one
backward (Qiyuan-Ge/PaintMind#7)."""
import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from repro_support import main_ddp


class Trainer:
    def __init__(self):
        self.vqvae = nn.Conv2d(3, 3, 3, padding=1)
        self.discr = DistributedDataParallel(
            nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.LeakyReLU(0.2), nn.Conv2d(4, 1, 3)))
        self.d_optim = torch.optim.Adam(self.discr.parameters())

    def gradient_penalty(self, real, fake):
        eta = torch.rand(real.shape[0], 1, 1, 1)
        interpolated = (eta * real + (1 - eta) * fake).detach().requires_grad_(True)
        score = self.discr(interpolated)
        gradients = torch.autograd.grad(score.sum(), interpolated, create_graph=True)[0]
        return ((gradients.flatten(1).norm(2, dim=1) - 1) ** 2).mean()

    def train_step(self, img):
        rec = self.vqvae(img).detach()
        fake_pred = self.discr(rec)
        real_pred = self.discr(img)
        d_loss = torch.relu(1 + fake_pred).mean() + torch.relu(1 - real_pred).mean()
        d_loss = d_loss + self.gradient_penalty(img, rec)
        d_loss.backward()
        self.d_optim.step()


def step(rank):
    Trainer().train_step(torch.randn(2, 3, 8, 8))


if __name__ == "__main__":
    main_ddp(step)
