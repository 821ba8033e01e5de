# D updated by hand through p.data.add_ (old-style SGD) before G's backward
# through D(fake): .data has its own version counter, so autograd sees nothing.
# silent: expect silent
# silent: tensor 0.weight
# silent: tensor 2.weight
import torch
from torch import nn

torch.manual_seed(0)
G = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 4))
D = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
real = torch.randn(5, 4)
fake = G(torch.randn(5, 4))
d_fake = D(fake)  # silent: saved
loss_d = nn.functional.softplus(d_fake).mean() + nn.functional.softplus(-D(real)).mean()
loss_d.backward(retain_graph=True)
for p in D.parameters():
    p.data.add_(p.grad, alpha=-0.1)  # silent: written
G.zero_grad()
loss_g = nn.functional.softplus(-d_fake).mean()
loss_g.backward()  # silent: backward
grads = [p.grad.clone() for p in G.parameters()]
