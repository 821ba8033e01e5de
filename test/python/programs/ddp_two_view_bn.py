# Two views through one DDP-wrapped BatchNorm model before one backward: the
# second forward's buffer broadcast overwrites the running statistics the
# first saved (torch <= 2.12.0; 2.12.1+ keeps their version counters).
# explain: ranks 2
# explain: tensor 1.running_mean
# explain: tensor 1.running_var
import gc

import torch
import torch.distributed as dist
from torch import nn

dist.init_process_group("gloo")
torch.manual_seed(0)
net = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 1))
model = nn.parallel.DistributedDataParallel(net)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
torch.manual_seed(1 + dist.get_rank())
for step in range(2):
    input0, input1 = torch.randn(6, 4), torch.randn(6, 4)
    out1 = model(input0)  # explain: saved
    out2 = model(input1)  # explain: written
    loss = (out1 - out2).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"rank {dist.get_rank()} loss {loss.item():.6f}")
del model, opt
gc.collect()
dist.barrier()
dist.destroy_process_group()
