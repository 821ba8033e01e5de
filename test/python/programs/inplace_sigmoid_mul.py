# sigmoid saves its output; mul_ then overwrites it.
import torch
from torch import nn

torch.manual_seed(0)
lin = nn.Linear(4, 4)
x = torch.randn(3, 4)
gate = torch.sigmoid(lin(x))  # explain: saved
gate.mul_(2.0)  # explain: written
loss = gate.sum()
loss.backward()
print(f"loss {loss.item():.6f}")
