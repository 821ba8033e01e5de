# Triplet loss with anchor, positive and negative stacked into one batch and
# one forward (the usual DDP-friendly form).
import gc

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    embed = DDP(nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 4)))
    criterion = nn.TripletMarginLoss(margin=1.0)
    opt = torch.optim.SGD(embed.parameters(), lr=0.1)
    torch.manual_seed(1 + dist.get_rank())
    for step in range(3):
        anchor = torch.randn(6, 8)
        batch = torch.cat([anchor, anchor + 0.1 * torch.randn(6, 8), torch.randn(6, 8)])
        a, p, n = embed(batch).chunk(3)
        loss = criterion(a, p, n)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"rank {dist.get_rank()} loss {loss.item():.6f}")
    del embed, opt
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
