# An in-place tanh_ saves its result; a later mul_ overwrites it.
import torch
from torch import nn

torch.manual_seed(0)
lin = nn.Linear(4, 4)
x = torch.randn(3, 4)
h = lin(x)
h.tanh_()  # explain: saved
h.mul_(0.5)  # explain: written
loss = h.pow(2).sum()
loss.backward()
print(f"loss {loss.item():.6f}")
