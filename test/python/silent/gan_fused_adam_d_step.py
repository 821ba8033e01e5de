# D steps with a fused Adam between its backward (retain_graph=True) and G's
# backward through D(fake): the fused kernel writes D's weights without
# bumping their version counters, so G's backward runs on the stepped weights.
# silent: expect silent
# silent: tensor 2.weight
import torch
from torch import nn

torch.manual_seed(0)
G = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 4))
D = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
opt_g = torch.optim.Adam(G.parameters(), lr=1e-3)
opt_d = torch.optim.Adam(D.parameters(), lr=0.1, fused=True)
real = torch.randn(5, 4)
fake = G(torch.randn(5, 4))
d_fake = D(fake)  # silent: saved
loss_d = nn.functional.softplus(d_fake).mean() + nn.functional.softplus(-D(real)).mean()
opt_d.zero_grad()
loss_d.backward(retain_graph=True)
opt_d.step()  # silent: written
loss_g = nn.functional.softplus(-d_fake).mean()
opt_g.zero_grad()
loss_g.backward()  # silent: backward
grads = [p.grad.clone() for p in G.parameters()]
