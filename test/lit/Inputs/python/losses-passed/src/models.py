import torch
from torch import nn, optim


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))

    def forward(self, x):
        return self.net(x)


class GAN(nn.Module):
    def __init__(self):
        super().__init__()
        generator = nn.Linear(4, 4)
        discriminator = Discriminator()
        self.add_module("generator", generator)
        self.add_module("discriminator", discriminator)
        self.gen_optimizer = optim.Adam(params=generator.parameters())
        self.dis_optimizer = optim.Adam(params=discriminator.parameters())

    def process(self, images):
        outputs = self.generator(torch.randn_like(images))
        dis_loss = 0
        dis_loss += self.discriminator(outputs.detach()).mean()
        dis_loss -= self.discriminator(images).mean()
        gen_loss = 0
        gen_loss += -self.discriminator(outputs).mean()
        return outputs, gen_loss, dis_loss

    def backward(self, gen_loss=None, dis_loss=None):
        if dis_loss is not None:
            dis_loss.backward()
        self.dis_optimizer.step()
        if gen_loss is not None:
            gen_loss.backward()
        self.gen_optimizer.step()


class OrderedGAN(nn.Module):
    def __init__(self):
        super().__init__()
        generator = nn.Linear(4, 4)
        discriminator = Discriminator()
        self.add_module("generator", generator)
        self.add_module("discriminator", discriminator)
        self.gen_optimizer = optim.Adam(params=generator.parameters())
        self.dis_optimizer = optim.Adam(params=discriminator.parameters())

    def process(self, images):
        outputs = self.generator(torch.randn_like(images))
        dis_loss = 0
        dis_loss += self.discriminator(outputs.detach()).mean()
        dis_loss -= self.discriminator(images).mean()
        gen_loss = 0
        gen_loss += -self.discriminator(outputs).mean()
        return outputs, gen_loss, dis_loss

    def backward(self, gen_loss=None, dis_loss=None):
        if gen_loss is not None:
            gen_loss.backward()
        self.gen_optimizer.step()
        self.dis_optimizer.zero_grad()
        if dis_loss is not None:
            dis_loss.backward()
        self.dis_optimizer.step()
