import sys

import torch
from torch import nn

net = nn.Linear(4, 4)
x = torch.randn(2, 4)


def weighted():
    feats = net(x)
    loss = feats.sum()
    weight = 1.0
    for k in range(3):
        loss = loss + weight * feats.pow(2).mean()
        weight /= 2.0
    loss.backward()


def stored():
    feats = net(x)
    outs = dict()
    for k in range(2):
        y = torch.sigmoid(feats)
        outs[k] = y
    sum(v.sum() for v in outs.values()).backward()


def averaged():
    views = [net(x), net(x)]
    n = len(views) + 1
    total = views[0].new_zeros(1)
    for v in views:
        total += v.sum()
    out = total / (n - 1)
    total += 1
    out.backward()


def written():
    y = torch.sigmoid(net(x))
    out = y * 2
    y *= 2
    (out + y).sum().backward()


if __name__ == "__main__":
    globals()[sys.argv[1]]()
