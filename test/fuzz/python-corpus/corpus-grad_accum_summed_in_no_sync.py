# Summed micro-batch losses with the forwards inside model.no_sync(), one
# backward outside it. Inside no_sync DDP does not arm the next forward's
# buffer broadcast, so the later forwards broadcast nothing.
import gc

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 5)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    torch.manual_seed(1 + dist.get_rank())
    for step in range(2):
        with model.no_sync():
            a = F.cross_entropy(model(torch.randn(4, 8)), torch.randint(0, 5, (4,)))
            b = F.cross_entropy(model(torch.randn(4, 8)), torch.randint(0, 5, (4,)))
        opt.zero_grad()
        (a + b).backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= dist.get_world_size()
        opt.step()
    print(f"rank {dist.get_rank()} loss {(a + b).item():.6f}")
    del model, opt
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
