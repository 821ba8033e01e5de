"""The discriminator steps between the forward D(G(z)) and the generator's
backward through that same output (leftthomas/SRGAN#74)."""
import torch
from torch import nn

from repro_support import main


def step():
    gen = nn.Sequential(nn.Conv2d(3, 3, 3, padding=1))
    disc = nn.Sequential(nn.Conv2d(3, 4, 3), nn.LeakyReLU(0.2), nn.Conv2d(4, 1, 3))
    opt_d = torch.optim.Adam(disc.parameters())
    fake = gen(torch.randn(2, 3, 8, 8))
    real_out = disc(torch.randn(2, 3, 8, 8)).mean()
    fake_out = disc(fake).mean()
    d_loss = 1 - real_out + fake_out
    d_loss.backward(retain_graph=True)
    opt_d.step()
    g_loss = (1 - fake_out) + fake.abs().mean()
    g_loss.backward()


if __name__ == "__main__":
    main(step)
