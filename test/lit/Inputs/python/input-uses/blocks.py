"""Modules whose forward first writes or saves its input (issue 28,
osmr/imgclsmob#13): `python blocks.py` runs each unit once with one
backward and prints whether it trains."""
import sys

import torch
from torch import nn


class PreActBlock(nn.Module):
    def __init__(self, activate):
        super().__init__()
        self.activate = activate
        if activate:
            self.activ = nn.ReLU(inplace=True)
        self.conv = nn.Conv2d(4, 4, 3, padding=1)

    def forward(self, x):
        if self.activate:
            x = self.activ(x)
        return self.conv(x)


class ConvBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 4, 1)

    def forward(self, x):
        x = self.conv(x)
        return x


def pre_act_block(activate):
    return PreActBlock(activate)


class Unit(nn.Module):
    def __init__(self, start_with_relu):
        super().__init__()
        self.identity_conv = ConvBlock()
        self.body = nn.Sequential()
        for i in range(2):
            self.body.add_module("block{}".format(i + 1),
                                 pre_act_block(start_with_relu if i == 0 else True))

    def forward(self, x):
        identity = self.identity_conv(x)
        x = self.body(x)
        return x + identity


class CloneUnit(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(PreActBlock(True), PreActBlock(True))

    def forward(self, x):
        identity = x.clone()
        x = self.body(x)
        return x + identity


class ResidualBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(4, 4, 3, padding=1), nn.Conv2d(4, 4, 3, padding=1)
        self.act = nn.ReLU(inplace=True)

    def forward(self, x):
        shortcut = x
        x = self.conv1(x)
        x = self.act(x)
        x = self.conv2(x)
        x += shortcut
        return x


if __name__ == "__main__":
    for name, unit in [("Unit(True)", Unit(True)), ("Unit(False)", Unit(False)),
                       ("CloneUnit", CloneUnit()), ("ResidualBlock", ResidualBlock())]:
        x = nn.Conv2d(3, 4, 1)(torch.randn(2, 3, 5, 5))
        try:
            unit(x).sum().backward()
            print(name, "trains")
        except RuntimeError as e:
            print(name, "fails" if "modified by an inplace operation" in str(e) else e)
    sys.exit(0)
