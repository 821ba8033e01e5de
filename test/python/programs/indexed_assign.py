# Indexed assignment into an activation that ReLU saved.
import torch
from torch import nn

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(4, 6), nn.ReLU())
x = torch.randn(3, 4)
h = net(x)  # explain: saved
h[:, 0] = 0.0  # explain: written
loss = h.sum()
loss.backward()
print(f"loss {loss.item():.6f}")
