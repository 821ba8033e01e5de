import sys

import torch

from .models import GAN, OrderedGAN


class Trainer:
    def __init__(self):
        self.gan = GAN().to("cpu")
        self.ordered_gan = OrderedGAN()

    def train(self):
        images = torch.randn(2, 4)
        outputs, gen_loss, dis_loss = self.gan.process(images)
        self.gan.backward(gen_loss, dis_loss)

    def train_ordered(self):
        images = torch.randn(2, 4)
        outputs, gen_loss, dis_loss = self.ordered_gan.process(images)
        self.ordered_gan.backward(gen_loss, dis_loss)


if __name__ == "__main__":
    getattr(Trainer(), sys.argv[1])()
