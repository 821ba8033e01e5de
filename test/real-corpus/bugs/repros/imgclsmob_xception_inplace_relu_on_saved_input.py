"""Xception unit: the identity branch's 1x1 convolution saves the unit's
input x; the body then starts with nn.ReLU(inplace=True) on that same x,
inside a Sequential of blocks built in another class (osmr/imgclsmob#13)."""
import torch
from torch import nn

from repro_support import main


class DwsConvBlock(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.activ = nn.ReLU(inplace=True)
        self.conv = nn.Conv2d(channels, channels, 3, padding=1, groups=channels, bias=False)
        self.bn = nn.BatchNorm2d(channels)

    def forward(self, x):
        x = self.activ(x)
        return self.bn(self.conv(x))


class XceptionUnit(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.identity_conv = nn.Sequential(nn.Conv2d(in_channels, out_channels, 1, bias=False),
                                           nn.BatchNorm2d(out_channels))
        self.body = nn.Sequential()
        self.body.add_module("block1", DwsConvBlock(in_channels))
        self.body.add_module("expand", nn.Conv2d(in_channels, out_channels, 1))

    def forward(self, x):
        identity = self.identity_conv(x)
        x = self.body(x)
        return x + identity


def step():
    net = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), XceptionUnit(4, 6))
    net(torch.randn(2, 3, 8, 8)).sum().backward()


if __name__ == "__main__":
    main(step)
