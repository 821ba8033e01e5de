"""The discriminator's scores of the fake are computed once; the
discriminator steps after a retain_graph backward, then a generator loss
module takes those same scores and backpropagates through the stepped
discriminator (manuelfritsche/real-world-sr#18)."""
import torch
from torch import nn

from repro_support import main


class GeneratorLoss(nn.Module):
    def forward(self, fake_scores, fake, source):
        return (fake - source).abs().mean() - fake_scores.mean()


def step():
    gen = nn.Conv2d(3, 3, 3, padding=1)
    disc = nn.Sequential(nn.Conv2d(3, 4, 3), nn.LeakyReLU(0.2), nn.Conv2d(4, 1, 3))
    opt_d = torch.optim.Adam(disc.parameters())
    source, target = torch.randn(2, 3, 8, 8), torch.randn(2, 3, 8, 8)
    fake = gen(source)
    real_scores, fake_scores = disc(target), disc(fake)
    disc.zero_grad()
    (fake_scores.mean() - real_scores.mean()).backward(retain_graph=True)
    opt_d.step()
    gen.zero_grad()
    GeneratorLoss()(fake_scores, fake, source).backward()


if __name__ == "__main__":
    main(step)
