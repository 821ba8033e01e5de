"""CycleGAN: the generators' optimizer (itertools.chain over both) steps after
a backward with retain_graph=True; the discriminator's loss then takes the
generator's output without detach and backpropagates through the stepped
generator (cy-xu/simple_CycleGAN#3)."""
import itertools

import torch
from torch import nn

from repro_support import main


def step():
    gen_x, gen_y = nn.Conv2d(3, 3, 3, padding=1), nn.Conv2d(3, 3, 3, padding=1)
    disc_x = nn.Sequential(nn.Conv2d(3, 4, 3), nn.LeakyReLU(0.2), nn.Conv2d(4, 1, 3))
    opt_g = torch.optim.Adam(itertools.chain(gen_x.parameters(), gen_y.parameters()))
    opt_d = torch.optim.Adam(disc_x.parameters())
    real_x, real_y = torch.randn(2, 3, 8, 8), torch.randn(2, 3, 8, 8)
    opt_g.zero_grad()
    fake_y = gen_x(real_x)
    loss_x = (disc_x(fake_y) - 1).pow(2).mean() + (gen_y(fake_y) - real_x).abs().mean()
    loss_x.backward(retain_graph=True)
    opt_g.step()
    opt_d.zero_grad()
    loss_d = (disc_x(real_y) - 1).pow(2).mean() + disc_x(fake_y).pow(2).mean()
    loss_d.backward()
    opt_d.step()


if __name__ == "__main__":
    main(step)
