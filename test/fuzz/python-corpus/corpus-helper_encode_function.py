# Two views through a module-level helper that takes the DDP model as a
# parameter (encode(model, view) in many SSL codebases' utils.py).
import gc

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def encode(model, view):
    return F.normalize(model(view), dim=1)  # corpus: expect here


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 4)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    torch.manual_seed(1 + dist.get_rank())
    for step in range(3):
        x = torch.randn(6, 8)
        z1 = encode(model, x + 0.1 * torch.randn_like(x))
        z2 = encode(model, x + 0.1 * torch.randn_like(x))  # corpus: expect here
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
