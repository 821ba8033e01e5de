# A torch.compile'd model (backend inductor) whose compiled graph saved a
# weight for its backward; a clamp of that weight under no_grad before the
# backward makes it stale (the explainer must read the compiled graph's node
# without unpacking its saved tensors).
# explain: tensor 2.weight
import torch
from torch import nn

torch.manual_seed(0)
net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
compiled = torch.compile(net, backend="inductor")
out = compiled(torch.randn(3, 4))  # explain: saved
with torch.no_grad():
    net[2].weight.clamp_(-0.1, 0.1)  # explain: written
out.sum().backward()
print(f"out {out.sum().item():.6f}")
