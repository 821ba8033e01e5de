# The GAN of gan_fused_adam_d_step.py with D wrapped in DistributedDataParallel
# (one Gloo rank): D's fused Adam step before G's backward through D(fake)
# writes D's weights without bumping their version counters, and DDP's
# gradient hooks change nothing of that.
# silent: expect silent
# silent: tensor 2.weight
import os

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
store = dist.HashStore()
dist.init_process_group("gloo", store=store, rank=0, world_size=1)
try:
    torch.manual_seed(0)
    G = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 4))
    D = DDP(nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1)))
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
finally:
    dist.destroy_process_group()
