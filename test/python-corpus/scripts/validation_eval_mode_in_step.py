# Validation in the step with the model switched to eval mode (running
# statistics used, not updated) under no_grad, then back to train mode,
# before the training loss's backward.
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
    val_x, val_y = torch.randn(6, 8), torch.randint(0, 5, (6,))
    for step in range(3):
        x, y = torch.randn(6, 8), torch.randint(0, 5, (6,))
        loss = F.cross_entropy(model(x), y)
        model.eval()
        with torch.no_grad():
            val_loss = F.cross_entropy(model(val_x), val_y)  # corpus: expect here
        model.train()
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"rank {dist.get_rank()} loss {loss.item():.6f} val {val_loss.item():.6f}")
    del model, opt
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
