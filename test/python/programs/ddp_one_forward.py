# Control: both views through one DDP forward (one broadcast) trains.
# explain: ranks 2
import gc

import torch
import torch.distributed as dist
from torch import nn


class TwoViews(nn.Module):
    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, a, b):
        return self.inner(a), self.inner(b)


dist.init_process_group("gloo")
torch.manual_seed(0)
net = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 1))
model = nn.parallel.DistributedDataParallel(TwoViews(net))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
torch.manual_seed(1 + dist.get_rank())
for step in range(2):
    out1, out2 = model(torch.randn(6, 4), torch.randn(6, 4))
    loss = (out1 - out2).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"rank {dist.get_rank()} loss {loss.item():.6f}")
del model, opt
gc.collect()
dist.barrier()
dist.destroy_process_group()
