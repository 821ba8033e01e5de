# pytorch/pytorch#39141: the discriminator steps between its backward
# (retain_graph=True) and the generator's backward through the same graph.
# explain: tensor 2.weight
import torch
from torch import nn

torch.manual_seed(0)
G = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 4))
D = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
opt_g = torch.optim.Adam(G.parameters(), lr=1e-3)
opt_d = torch.optim.Adam(D.parameters(), lr=1e-3)
real = torch.randn(5, 4)
fake = G(torch.randn(5, 4))
d_fake = D(fake)  # explain: saved
loss_d = nn.functional.softplus(d_fake).mean() + nn.functional.softplus(-D(real)).mean()
opt_d.zero_grad()
loss_d.backward(retain_graph=True)
opt_d.step()  # explain: written
loss_g = nn.functional.softplus(-d_fake).mean()
opt_g.zero_grad()
loss_g.backward()
opt_g.step()
print(f"loss_g {loss_g.item():.6f}")
