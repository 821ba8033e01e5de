# The ordinary loop (pytorch/examples imagenet/main.py): train steps, then a
# validation pass in eval mode under no_grad after the optimizer step.
import gc

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def validate(model, batches):
    model.eval()
    total = 0.0
    with torch.no_grad():
        for x, y in batches:
            total += F.cross_entropy(model(x), y).item()
    model.train()
    return total / len(batches)


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 5)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    torch.manual_seed(1 + dist.get_rank())
    val = [(torch.randn(6, 8), torch.randint(0, 5, (6,))) for _ in range(2)]
    for epoch in range(2):
        for step in range(2):
            x, y = torch.randn(6, 8), torch.randint(0, 5, (6,))
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        val_loss = validate(model, val)
    print(f"rank {dist.get_rank()} loss {loss.item():.6f} val {val_loss:.6f}")
    del model, opt
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
