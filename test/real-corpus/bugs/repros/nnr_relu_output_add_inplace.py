"""A graph layer adds its residual in place to the output of F.relu, which
relu saved for its backward (Veason-silverbullet/NNR#3)."""
import torch
import torch.nn.functional as F
from torch import nn

from repro_support import main


class GraphLayer(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.W = nn.Linear(dim, dim)

    def forward(self, feature, graph):
        out = F.relu(self.W(torch.bmm(graph, feature)))
        out += feature
        return out


def step():
    layer = GraphLayer(4)
    layer(torch.randn(2, 3, 4), torch.rand(2, 3, 3)).sum().backward()


if __name__ == "__main__":
    main(step)
