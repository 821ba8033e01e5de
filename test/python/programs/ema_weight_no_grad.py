# An EMA update written into the model's own weights between forward and
# backward.
# explain: tensor 2.weight
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
shadow = [p.detach().clone() for p in model.parameters()]
x = torch.randn(5, 4)
loss = model(x).pow(2).mean()  # explain: saved
with torch.no_grad():
    for p, s in zip(model.parameters(), shadow):
        p.mul_(0.9).add_(s, alpha=0.1)  # explain: written
loss.backward()
print(f"loss {loss.item():.6f}")
