"""A block takes the first token of every region as a view (x[:, 0] reshaped),
normalises it (LayerNorm saves that view), then writes the result back with
x[:, 0] = ..., bumping the version of the saved input
(sunlicai/MAE-DFER#15)."""
import torch
from torch import nn

from repro_support import main


class RegionBlock(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.mix = nn.Linear(dim, dim)

    def forward(self, x, batch):
        x = x + self.mix(x)
        tokens = x[:, 0].reshape(batch, -1, x.shape[-1])
        tokens = tokens + self.mix(self.norm(tokens))
        x[:, 0] = tokens.reshape(-1, x.shape[-1])
        return x


def step():
    RegionBlock(4)(torch.randn(6, 3, 4), 2).sum().backward()


if __name__ == "__main__":
    main(step)
