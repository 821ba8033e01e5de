# Gradient accumulation by summing the micro-batches' losses and calling
# backward once (the memory-hungry variant people write first): one forward
# per micro-batch before the one backward.
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
        micro_batches = [(torch.randn(4, 8), torch.randint(0, 5, (4,))) for _ in range(3)]
        total = 0
        for x, y in micro_batches:
            total = total + F.cross_entropy(model(x), y)  # corpus: expect here
        opt.zero_grad()
        (total / len(micro_batches)).backward()
        opt.step()
    print(f"rank {dist.get_rank()} loss {total.item():.6f}")
    del model, opt
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
