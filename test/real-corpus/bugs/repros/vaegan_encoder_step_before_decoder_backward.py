"""VAE-GAN with one optimizer per submodule (RMSprop over net.encoder's,
net.decoder's, net.discriminator's parameters): the encoder steps after a
retain_graph backward, then the decoder's loss, which goes back through the
encoder, backpropagates (lucabergamini/VAEGAN-PYTORCH#5)."""
import torch
from torch import nn
from torch.optim import RMSprop

from repro_support import main


class VaeGan(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 4))
        self.decoder = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 6))
        self.discriminator = nn.Sequential(nn.Linear(6, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1))

    def forward(self, x):
        z = self.encoder(x)
        recon = self.decoder(z)
        return recon, z, self.discriminator(recon), self.discriminator(x)


def step():
    net = VaeGan()
    optimizer_encoder = RMSprop(params=net.encoder.parameters())
    optimizer_decoder = RMSprop(params=net.decoder.parameters())
    optimizer_discriminator = RMSprop(params=net.discriminator.parameters())
    x = torch.randn(4, 6)
    recon, z, score_recon, score_real = net(x)
    mse = (recon - x).pow(2).sum()
    loss_encoder = z.pow(2).sum() + mse
    loss_discriminator = nn.functional.softplus(score_recon).sum() + nn.functional.softplus(-score_real).sum()
    loss_decoder = 0.5 * mse - 0.5 * loss_discriminator
    net.zero_grad()
    loss_encoder.backward(retain_graph=True)
    optimizer_encoder.step()
    net.zero_grad()
    loss_decoder.backward(retain_graph=True)
    optimizer_decoder.step()
    net.discriminator.zero_grad()
    loss_discriminator.backward()
    optimizer_discriminator.step()


if __name__ == "__main__":
    main(step)
