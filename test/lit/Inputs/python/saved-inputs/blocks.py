import sys
from functools import partial

import torch
from einops import rearrange
from torch import nn


class TokenBlock(nn.Module):
    def __init__(self, dim, norm_layer=nn.LayerNorm):
        super().__init__()
        self.norm = norm_layer(dim)
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        tokens = rearrange(x[:, 0], "(b n) c -> b n c", n=2)
        tokens = tokens + self.fc(self.norm(tokens))
        x[:, 0] = rearrange(tokens, "b n c -> (b n) c")
        return x


class EpsTokenBlock(nn.Module):
    def __init__(self, dim, norm_layer=partial(nn.LayerNorm, eps=1e-6)):
        super().__init__()
        self.norm = norm_layer(dim)
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        tokens = rearrange(x[:, 0], "(b n) c -> b n c", n=2)
        tokens = tokens + self.fc(self.norm(tokens))
        x[:, 0] = rearrange(tokens, "b n c -> (b n) c")
        return x


class ClonedTokenBlock(nn.Module):
    def __init__(self, dim, norm_layer=nn.LayerNorm):
        super().__init__()
        self.norm = norm_layer(dim)
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        tokens = rearrange(x[:, 0].clone(), "(b n) c -> b n c", n=2)
        tokens = tokens + self.fc(self.norm(tokens))
        x[:, 0] = rearrange(tokens, "b n c -> (b n) c")
        return x


class ProjectedHead(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        y = self.proj(x)
        x[:, :1] = 0
        return y


def train(block):
    x = torch.randn(4, 3, 8, requires_grad=True) * 1
    block(x).sum().backward()


if __name__ == "__main__":
    blocks = {
        "token": lambda: TokenBlock(8),
        "eps_token": lambda: EpsTokenBlock(8),
        "cloned": lambda: ClonedTokenBlock(8),
        "projected": lambda: ProjectedHead(8),
    }
    train(blocks[sys.argv[1]]())
