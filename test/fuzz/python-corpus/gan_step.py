import torch
import torch.nn.functional as F
from torch import nn

G = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 8))
D = nn.Sequential(nn.Linear(8, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
opt_g = torch.optim.Adam(G.parameters(), lr=1e-3)
opt_d = torch.optim.Adam(D.parameters(), lr=1e-3)
for real in loader:
    d_fake = D(G(torch.randn(6, 4)))
    loss_d = F.softplus(d_fake).mean() + F.softplus(-D(real)).mean()
    loss_d.backward(retain_graph=True)
    opt_d.step()
    F.softplus(-d_fake).mean().backward()
    opt_g.step()
