# WGAN: the critic's weights clipped through p.data.clamp_ after its step,
# before G's loss reuses the critic's graph of the fakes.
# silent: expect silent
# silent: tensor 0.weight
import torch
from torch import nn

torch.manual_seed(0)
G = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 4))
critic = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
real = torch.randn(5, 4)
fake = G(torch.randn(5, 4))
c_fake = critic(fake)  # silent: saved
loss_c = c_fake.mean() - critic(real).mean()
loss_c.backward(retain_graph=True)
for p in critic.parameters():
    p.data.clamp_(-0.1, 0.1)  # silent: written
G.zero_grad()
loss_g = -c_fake.mean()
loss_g.backward()  # silent: backward
grads = [p.grad.clone() for p in G.parameters()]
