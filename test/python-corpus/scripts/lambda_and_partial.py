# The forward hidden in a lambda and a functools.partial (embed = lambda v:
# model(v); a partial that binds the model for a loss helper), one backward.
import functools
import gc

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def project(model, view):
    return F.normalize(model(view), dim=1)  # corpus: expect here


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 4)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    embed = lambda v: model(v)  # corpus: expect here
    proj = functools.partial(project, model)
    torch.manual_seed(1 + dist.get_rank())
    for step in range(3):
        x = torch.randn(6, 8)
        z1 = embed(x + 0.1 * torch.randn_like(x))
        z2 = proj(x + 0.1 * torch.randn_like(x))  # corpus: expect here
        loss = -(F.normalize(z1, dim=1) * z2).sum(1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"rank {dist.get_rank()} loss {loss.item():.6f}")
    del model, opt, embed, proj
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
