# The same GAN with the default (foreach) Adam: its step bumps D's weights'
# version counters, so G's backward raises autograd's in-place error.
# silent: expect raises
import torch
from torch import nn

torch.manual_seed(0)
G = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 4))
D = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
opt_g = torch.optim.Adam(G.parameters(), lr=1e-3)
opt_d = torch.optim.Adam(D.parameters(), lr=0.1)
real = torch.randn(5, 4)
fake = G(torch.randn(5, 4))
d_fake = D(fake)
loss_d = nn.functional.softplus(d_fake).mean() + nn.functional.softplus(-D(real)).mean()
opt_d.zero_grad()
loss_d.backward(retain_graph=True)
opt_d.step()
loss_g = nn.functional.softplus(-d_fake).mean()
opt_g.zero_grad()
loss_g.backward()
grads = [p.grad.clone() for p in G.parameters()]
