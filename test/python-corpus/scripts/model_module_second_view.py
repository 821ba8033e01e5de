# The workaround from the forums (discuss.pytorch.org, "inplace operation"
# with DDP and two forwards): the second view goes through model.module,
# the wrapped network itself, which does not broadcast buffers.
import gc

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 4)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    torch.manual_seed(1 + dist.get_rank())
    for step in range(3):
        x = torch.randn(6, 8)
        z1 = F.normalize(model(x + 0.1 * torch.randn_like(x)), dim=1)
        z2 = F.normalize(model.module(x + 0.1 * torch.randn_like(x)), dim=1)
        loss = -(z1 * z2).sum(1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"rank {dist.get_rank()} loss {loss.item():.6f}")
    del model, opt
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
