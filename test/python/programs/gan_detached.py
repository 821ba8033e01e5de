# Control: the discriminator's loss uses detached fakes and the generator
# recomputes D(fake) after the discriminator's step; it trains.
import torch
from torch import nn

torch.manual_seed(0)
G = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 4))
D = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
opt_g = torch.optim.Adam(G.parameters(), lr=1e-3)
opt_d = torch.optim.Adam(D.parameters(), lr=1e-3)
for step in range(3):
    real = torch.randn(5, 4)
    fake = G(torch.randn(5, 4))
    loss_d = (nn.functional.softplus(D(fake.detach())).mean()
              + nn.functional.softplus(-D(real)).mean())
    opt_d.zero_grad()
    loss_d.backward()
    opt_d.step()
    loss_g = nn.functional.softplus(-D(fake)).mean()
    opt_g.zero_grad()
    loss_g.backward()
    opt_g.step()
print(f"loss_g {loss_g.item():.6f}")
