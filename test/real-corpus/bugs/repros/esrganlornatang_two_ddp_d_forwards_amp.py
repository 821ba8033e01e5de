"""A training function takes the DDP-wrapped discriminator (BatchNorm inside)
as a parameter and, under autocast, runs D(real) then D(fake) before one
scaled backward of a relativistic loss of both
(Lornatang/ESRGAN-PyTorch#5)."""
import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from repro_support import main_ddp


def train_gan(batches, discriminator, discriminator_optimizer, generator, scaler):
    criterion = nn.BCEWithLogitsLoss()
    for lr, hr in batches:
        ones, zeros = torch.ones(lr.size(0), 1), torch.zeros(lr.size(0), 1)
        discriminator_optimizer.zero_grad()
        with torch.autocast("cpu", enabled=False):
            sr = generator(lr)
            real_output = discriminator(hr)
            fake_output = discriminator(sr.detach())
            d_loss = criterion(real_output - fake_output.mean(), ones) + criterion(fake_output - real_output.mean(), zeros)
        scaler.scale(d_loss).backward()
        scaler.step(discriminator_optimizer)
        scaler.update()


def step(rank):
    discriminator = DistributedDataParallel(nn.Sequential(
        nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.LeakyReLU(0.2), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 1)))
    generator = nn.Conv2d(3, 3, 3, padding=1)
    scaler = torch.amp.GradScaler("cpu", enabled=False)
    train_gan([(torch.randn(2, 3, 8, 8), torch.randn(2, 3, 8, 8))], discriminator,
              torch.optim.Adam(discriminator.parameters()), generator, scaler)


if __name__ == "__main__":
    main_ddp(step)
