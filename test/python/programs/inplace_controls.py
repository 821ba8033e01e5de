# Control: in-place writes to tensors no graph saved (a Linear output before
# any op saved it, a no_grad clamp after the backward, an optimizer step after
# the backward) train.
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
for step in range(3):
    h = model[0](torch.randn(3, 4))
    h.add_(1.0)
    out = model[2](model[1](h))
    gate = torch.sigmoid(out)
    gate = gate * 2.0
    loss = gate.pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    with torch.no_grad():
        for p in model.parameters():
            p.clamp_(-1.0, 1.0)
print(f"loss {loss.item():.6f}")
