from .b import build
model = build()
for x, y in loader:
    model(x)
    model(y).sum().backward()

#--- next file ---
import torch
from torch.nn.parallel import DistributedDataParallel as DDP
def build():
    return DDP(torch.nn.BatchNorm1d(4))
