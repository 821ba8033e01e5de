"""A model object holds the generator, the discriminator and their
optimizers as attributes; the loop reaches them through the object
(model.discriminator, model.dis_optimizer) and steps the discriminator before
the generator loss's backward through model.discriminator(prediction)
(geekyutao/RN#19)."""
import torch
from torch import nn

from repro_support import main


class InpaintingModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.generator = nn.Conv2d(3, 3, 3, padding=1)
        self.discriminator = nn.Sequential(nn.Conv2d(3, 4, 3), nn.LeakyReLU(0.2), nn.Conv2d(4, 1, 3), nn.Sigmoid())
        self.gen_optimizer = torch.optim.Adam(self.generator.parameters(), betas=(0.0, 0.9))
        self.dis_optimizer = torch.optim.Adam(self.discriminator.parameters(), betas=(0.0, 0.9))


def step():
    model = InpaintingModel()
    gt = torch.rand(2, 3, 8, 8)
    prediction = model.generator(gt)
    bce = nn.BCELoss()
    d_real, d_fake = model.discriminator(gt), model.discriminator(prediction.detach())
    d_loss = (bce(d_real, torch.ones_like(d_real)) + bce(d_fake, torch.zeros_like(d_fake))) / 2
    g_fake = model.discriminator(prediction)
    g_loss = bce(g_fake, torch.ones_like(g_fake)) + (gt - prediction).abs().mean()
    d_loss.backward()
    model.dis_optimizer.step()
    model.dis_optimizer.zero_grad()
    g_loss.backward()
    model.gen_optimizer.step()


if __name__ == "__main__":
    main(step)
