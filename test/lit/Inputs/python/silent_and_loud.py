import torch
from torch import nn

fc = nn.Linear(4, 3)
x = torch.randn(5, 4)
gate = torch.sigmoid(fc(x))
gate.data.mul_(2)
gate.mul_(2)
with torch.autograd._unsafe_preserve_version_counter(gate):
    gate.mul_(3)
loss = gate.sum()
loss.backward()
