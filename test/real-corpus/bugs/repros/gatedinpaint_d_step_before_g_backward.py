"""A trainer module runs the generator and, through a helper taking the
discriminator as a parameter, both discriminators; its forward returns a dict
of losses. The loop steps the discriminators' optimizer (list + list of
parameters) before the generator loss's backward through them
(daa233/generative-inpainting-pytorch#38)."""
import torch
from torch import nn

from repro_support import main


def critic():
    return nn.Sequential(nn.Conv2d(3, 4, 3), nn.LeakyReLU(0.2), nn.Conv2d(4, 1, 3))


class Trainer(nn.Module):
    def __init__(self):
        super().__init__()
        self.net_g = nn.Conv2d(3, 3, 3, padding=1)
        self.local_d, self.global_d = critic(), critic()
        self.optimizer_g = torch.optim.Adam(self.net_g.parameters())
        self.optimizer_d = torch.optim.Adam(list(self.local_d.parameters()) + list(self.global_d.parameters()))

    def dis_forward(self, net_d, real, fake):
        real_pred, fake_pred = torch.split(net_d(torch.cat([real, fake])), real.size(0))
        return real_pred, fake_pred

    def forward(self, x, truth):
        losses = {}
        out = self.net_g(x)
        real_l, fake_l = self.dis_forward(self.local_d, truth, out.detach())
        real_g, fake_g = self.dis_forward(self.global_d, truth, out.detach())
        losses["wgan_d"] = (fake_l - real_l).mean() + (fake_g - real_g).mean()
        losses["l1"] = (out - truth).abs().mean()
        _, fake_l = self.dis_forward(self.local_d, truth, out)
        _, fake_g = self.dis_forward(self.global_d, truth, out)
        losses["wgan_g"] = -fake_l.mean() - fake_g.mean()
        return losses


def step():
    trainer = Trainer()
    losses = trainer(torch.randn(2, 3, 8, 8), torch.randn(2, 3, 8, 8))
    trainer.optimizer_d.zero_grad()
    losses["wgan_d"].backward()
    trainer.optimizer_d.step()
    trainer.optimizer_g.zero_grad()
    (losses["l1"] + losses["wgan_g"]).backward()


if __name__ == "__main__":
    main(step)
