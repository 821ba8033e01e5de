"""Two discriminators built by a factory that also returns one optimizer over
both (list + list of parameters); their loss methods call self.forward. The
discriminator steps before the generator's backward through their outputs
(psh01087/Vid-ODE#6)."""
import torch
from torch import nn

from repro_support import main


class Critic(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(channels, 4, 3), nn.LeakyReLU(0.2), nn.Conv2d(4, 1, 3))

    def forward(self, x):
        return self.body(x)

    def generator_loss(self, fake):
        return ((self.forward(fake) - 1) ** 2).mean()

    def critic_loss(self, real, fake):
        return (self.forward(fake.detach()) ** 2).mean() + ((self.forward(real) - 1) ** 2).mean()


def build_critics():
    frames, clips = Critic(3), Critic(6)
    return frames, clips, torch.optim.Adamax(list(frames.parameters()) + list(clips.parameters()))


def step():
    gen = nn.Conv2d(3, 3, 3, padding=1)
    frames, clips, opt_d = build_critics()
    real = torch.randn(2, 3, 8, 8)
    fake = gen(torch.randn(2, 3, 8, 8))
    loss_d = clips.critic_loss(real.repeat(1, 2, 1, 1), fake.repeat(1, 2, 1, 1)) + frames.critic_loss(real, fake)
    loss_g = fake.abs().mean() + clips.generator_loss(fake.repeat(1, 2, 1, 1)) + frames.generator_loss(fake)
    opt_d.zero_grad()
    loss_d.backward()
    opt_d.step()
    loss_g.backward()


if __name__ == "__main__":
    main(step)
