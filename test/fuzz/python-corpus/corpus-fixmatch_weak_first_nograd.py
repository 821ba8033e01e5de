# FixMatch with the pseudo-label forward first, under no_grad, then labeled
# and strong batches concatenated into one forward with grad.
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
    for step in range(3):
        x, y = torch.randn(4, 8), torch.randint(0, 5, (4,))
        u = torch.randn(8, 8)
        with torch.no_grad():
            conf, pseudo = F.softmax(model(u + 0.05 * torch.randn_like(u)), 1).max(1)
        logits = model(torch.cat([x, u + 0.5 * torch.randn_like(u)]))
        loss = F.cross_entropy(logits[:4], y) + F.cross_entropy(logits[4:], pseudo)
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
