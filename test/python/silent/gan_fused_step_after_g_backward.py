# Control: the fused D step comes after G's backward; nothing it writes is
# read by a backward afterwards.
# silent: expect trains
import torch
from torch import nn

torch.manual_seed(0)
G = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 4))
D = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
opt_g = torch.optim.Adam(G.parameters(), lr=1e-3)
opt_d = torch.optim.Adam(D.parameters(), lr=0.1, fused=True)
real = torch.randn(5, 4)
fake = G(torch.randn(5, 4))
d_fake = D(fake)
loss_d = nn.functional.softplus(d_fake).mean() + nn.functional.softplus(-D(real)).mean()
opt_d.zero_grad()
loss_d.backward(retain_graph=True)
loss_g = nn.functional.softplus(-d_fake).mean()
opt_g.zero_grad()
loss_g.backward()
opt_d.step()
opt_g.step()
grads = [p.grad.clone() for p in G.parameters()]
