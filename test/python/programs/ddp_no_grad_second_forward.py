# A second forward under no_grad (an evaluation pass) before the backward of
# the first: the first forward left require_forward_param_sync set, so the
# evaluation forward broadcasts the buffers too.
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
x, target, held_out = torch.randn(6, 4), torch.randn(6, 1), torch.randn(6, 4)
out = model(x)  # explain: saved
with torch.no_grad():
    model.eval()
    score = model(held_out).mean()  # explain: written
    model.train()
loss = (out - target).pow(2).mean()
opt.zero_grad()
loss.backward()
opt.step()
print(f"rank {dist.get_rank()} loss {loss.item():.6f} score {score.item():.6f}")
del model, opt
gc.collect()
dist.barrier()
dist.destroy_process_group()
