"""The generator/encoder optimizer (chain over both) steps after a
retain_graph backward; the discriminator's loss then uses D(G(z)) computed
before the step, without detach, and backpropagates through the stepped
generator (fwt-team/VaGAN-pytorch#1)."""
from itertools import chain

import torch
from torch import nn

from repro_support import main


def step():
    encoder = nn.Linear(6, 4)
    gen = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 6))
    dis = nn.Sequential(nn.Linear(6, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1), nn.Sigmoid())
    gen_enc_ops = torch.optim.Adam(chain(gen.parameters(), encoder.parameters()))
    dis_ops = torch.optim.Adam(dis.parameters())
    real = torch.randn(4, 6)
    fake = gen(encoder(real))
    d_real, d_fake = dis(real), dis(fake)
    g_loss = torch.mean(-torch.log(d_fake)) + (fake - real).pow(2).mean()
    g_loss.backward(retain_graph=True)
    gen_enc_ops.step()
    dis_ops.zero_grad()
    d_loss = torch.mean(-torch.log(d_real) - torch.log(1 - d_fake)) / 2
    d_loss.backward()
    dis_ops.step()


if __name__ == "__main__":
    main(step)
