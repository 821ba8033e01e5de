# D's forward on the fake batch runs under activation checkpointing
# (reentrant); D steps with the default Adam, which bumps the version
# counters, before G's backward through D(fake). Without checkpointing this
# raises the in-place error (gan_adam_d_step.py); with it the backward
# recomputes D(fake) from the stepped weights and raises nothing.
# silent: expect silent
# silent: tensor 2.weight
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)
G = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 4))
D = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
opt_g = torch.optim.Adam(G.parameters(), lr=1e-3)
opt_d = torch.optim.Adam(D.parameters(), lr=0.1)
real = torch.randn(5, 4)
fake = G(torch.randn(5, 4))
d_fake = checkpoint(D, fake, use_reentrant=True)  # silent: saved
loss_d = nn.functional.softplus(d_fake).mean() + nn.functional.softplus(-D(real)).mean()
opt_d.zero_grad()
loss_d.backward(retain_graph=True)
opt_d.step()  # silent: written
loss_g = nn.functional.softplus(-d_fake).mean()
opt_g.zero_grad()
loss_g.backward()  # silent: backward
grads = [p.grad.clone() for p in G.parameters()]
