"""A model object registers its generator and discriminator with add_module;
process() returns both losses, and backward(gen_loss, dis_loss), called by
the trainer, steps the discriminator before the generator loss's backward
through a discriminator forward (knazeri/edge-connect#152, #188)."""
import torch
from torch import nn

from repro_support import main


class Inpainter(nn.Module):
    def __init__(self):
        super().__init__()
        generator = nn.Conv2d(2, 1, 3, padding=1)
        discriminator = nn.Sequential(nn.Conv2d(2, 4, 3), nn.LeakyReLU(0.2), nn.Conv2d(4, 1, 3))
        self.add_module("generator", generator)
        self.add_module("discriminator", discriminator)
        self.gen_optimizer = torch.optim.Adam(generator.parameters())
        self.dis_optimizer = torch.optim.Adam(discriminator.parameters())

    def process(self, images, masks):
        outputs = self.generator(torch.cat((images * (1 - masks), masks), dim=1))
        dis_real = self.discriminator(torch.cat((images, masks), dim=1))
        dis_fake = self.discriminator(torch.cat((outputs.detach(), masks), dim=1))
        dis_loss = (dis_fake.mean() - dis_real.mean()) / 2
        gen_loss = -self.discriminator(torch.cat((outputs, masks), dim=1)).mean()
        return outputs, gen_loss, dis_loss

    def backward(self, gen_loss, dis_loss):
        dis_loss.backward()
        self.dis_optimizer.step()
        gen_loss.backward()
        self.gen_optimizer.step()


def step():
    model = Inpainter()
    _, gen_loss, dis_loss = model.process(torch.randn(2, 1, 8, 8), torch.zeros(2, 1, 8, 8))
    model.backward(gen_loss, dis_loss)


if __name__ == "__main__":
    main(step)
