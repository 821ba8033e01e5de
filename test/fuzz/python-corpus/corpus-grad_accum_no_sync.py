# Gradient accumulation with DDP's no_sync (the DDP documentation's example;
# HF Accelerate's accumulate): each micro-batch's forward is followed by its
# backward, gradients synchronised on the last one.
import contextlib
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
    accum = 3
    for step in range(2):
        opt.zero_grad()
        for micro in range(accum):
            x, y = torch.randn(4, 8), torch.randint(0, 5, (4,))
            ctx = model.no_sync() if micro < accum - 1 else contextlib.nullcontext()
            with ctx:
                loss = F.cross_entropy(model(x), y) / accum
                loss.backward()
        opt.step()
    print(f"rank {dist.get_rank()} loss {loss.item():.6f}")
    del model, opt
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
