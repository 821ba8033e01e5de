"""A graph-reasoning module applies its nn.ReLU() module (which saves its
output) and then adds the input in place, z += x, for Laplacian smoothing
(hehao13/EBLNet#9)."""
import torch
from torch import nn

from repro_support import main


class GCN(nn.Module):
    def __init__(self, node_num, node_fea):
        super().__init__()
        self.conv_adj = nn.Conv1d(node_num, node_num, kernel_size=1, bias=False)
        self.bn_adj = nn.BatchNorm1d(node_num)
        self.conv_wg = nn.Conv1d(node_fea, node_fea, kernel_size=1, bias=False)
        self.relu = nn.ReLU()

    def forward(self, x):
        z = self.relu(self.bn_adj(self.conv_adj(x)))
        z += x
        return self.relu(self.conv_wg(z.transpose(1, 2).contiguous())).transpose(1, 2)


def step():
    GCN(5, 4)(torch.randn(2, 5, 4)).sum().backward()


if __name__ == "__main__":
    main(step)
