import torch
from torch import nn, optim


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 1))

    def forward(self, x):
        return self.net(x)

    def netD_adv_loss(self, real, fake):
        pred_fake = self.forward(fake.detach())
        pred_real = self.forward(real)
        return (pred_fake - pred_real).mean()

    def netG_adv_loss(self, fake):
        pred_fake = self.forward(fake)
        return -pred_fake.mean()


def create_netD(device):
    netD_img = Discriminator().to(device)
    netD_seq = Discriminator().to(device)
    optimizer_netD = optim.Adamax(list(netD_img.parameters()) + list(netD_seq.parameters()), lr=0.1)
    return netD_img, netD_seq, optimizer_netD
