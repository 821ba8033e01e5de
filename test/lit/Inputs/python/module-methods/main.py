import sys

import torch
from torch import nn, optim

from models.gan import *


def d_step_first():
    netG = nn.Linear(4, 4)
    optimizer_netG = optim.Adam(netG.parameters())
    netD_img, netD_seq, optimizer_netD = create_netD("cpu")
    real = torch.randn(2, 4)
    fake = netG(torch.randn(2, 4))
    loss_netD = netD_seq.netD_adv_loss(real, fake)
    loss_netG = netD_seq.netG_adv_loss(fake) + netD_img.netG_adv_loss(fake)
    optimizer_netD.zero_grad()
    loss_netD.backward()
    optimizer_netD.step()
    optimizer_netG.zero_grad()
    loss_netG.backward()
    optimizer_netG.step()


def g_step_first():
    netG = nn.Linear(4, 4)
    optimizer_netG = optim.Adam(netG.parameters())
    netD_img, netD_seq, optimizer_netD = create_netD("cpu")
    real = torch.randn(2, 4)
    fake = netG(torch.randn(2, 4))
    loss_netD = netD_seq.netD_adv_loss(real, fake)
    loss_netG = netD_seq.netG_adv_loss(fake) + netD_img.netG_adv_loss(fake)
    optimizer_netG.zero_grad()
    loss_netG.backward()
    optimizer_netG.step()
    optimizer_netD.zero_grad()
    loss_netD.backward()
    optimizer_netD.step()


if __name__ == "__main__":
    globals()[sys.argv[1]]()
