"""VAE-GAN whose forward returns the discriminator's outputs on the original,
reconstructed and sampled batch stacked together; per-submodule optimizers
step one after another, the encoder's before the decoder loss backpropagates
through the encoder (ry85/VAE-GAN#1)."""
import torch
from torch import nn
from torch.optim import RMSprop

from repro_support import main


class VaeGan(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 8))
        self.decoder = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 6))
        self.discriminator = nn.Sequential(nn.Linear(6, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1), nn.Sigmoid())

    def forward(self, x):
        mus, log_variances = self.encoder(x).chunk(2, dim=1)
        z = mus + torch.randn_like(mus) * (0.5 * log_variances).exp()
        x_tilde = self.decoder(z)
        x_p = self.decoder(torch.randn_like(z))
        disc_class = self.discriminator(torch.cat((x, x_tilde, x_p), 0))
        return x_tilde, disc_class, mus, log_variances


def step():
    net = VaeGan()
    optimizer_encoder = RMSprop(params=net.encoder.parameters())
    optimizer_decoder = RMSprop(params=net.decoder.parameters())
    x = torch.randn(4, 6)
    x_tilde, disc_class, mus, log_variances = net(x)
    original, predicted, sampled = disc_class.split(4)
    loss_encoder = (x_tilde - x).pow(2).sum() - 0.5 * (1 + log_variances - mus.pow(2) - log_variances.exp()).sum()
    loss_discriminator = -(original.log().sum() + (1 - predicted).log().sum() + (1 - sampled).log().sum())
    loss_decoder = (x_tilde - x).pow(2).sum() - 0.5 * loss_discriminator
    net.zero_grad()
    loss_encoder.backward(retain_graph=True)
    optimizer_encoder.step()
    net.zero_grad()
    loss_decoder.backward(retain_graph=True)
    optimizer_decoder.step()


if __name__ == "__main__":
    main(step)
