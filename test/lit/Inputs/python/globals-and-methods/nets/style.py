import torch
from torch import nn


class StyleNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU())
        self.content_fc = nn.Linear(4, 3)
        self.style_net = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
        self.style_fc = nn.Linear(4, 3)

    def forward(self, x):
        feature = self.stem(x).mean((2, 3))
        return self.content_fc(feature), self.style_fc(self.style_net(feature.flip(0)))

    def style_params(self):
        params = []
        for m in [self.style_net, self.style_fc]:
            params += [p for p in m.parameters()]
        return params

    def norm_params(self):
        params = []
        layers = [self.stem, self.content_fc]
        for layer in layers[:1]:
            for m in layer.modules():
                if isinstance(m, nn.BatchNorm2d):
                    params += [p for p in m.parameters()]
        return params


def style_net():
    return StyleNet()
