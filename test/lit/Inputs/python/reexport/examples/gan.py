import torch
from torch import nn


class GAN(nn.Module):
    def __init__(self):
        super().__init__()
        self.generator = nn.Linear(4, 4)
        self.discriminator = nn.Linear(4, 1)
        self.dis_optimizer = torch.optim.Adam(params=self.discriminator.parameters())


model = GAN()


def train(x):
    fake = model.generator(x)
    d_loss = model.discriminator(fake.detach()).mean()
    g_loss = -model.discriminator(fake).mean()
    d_loss.backward()
    model.dis_optimizer.step()
    g_loss.backward()


if __name__ == "__main__":
    train(torch.randn(2, 4))
