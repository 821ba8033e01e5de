# BYOL written with one backward per view (each half of the symmetric loss
# backpropagated as soon as it is computed, accumulating gradients): one DDP
# forward per backward.
import copy
import gc

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def regression(p, z):
    return 2 - 2 * F.cosine_similarity(p, z.detach(), dim=-1).mean()


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    online = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 4))
    target = copy.deepcopy(online)
    for p in target.parameters():
        p.requires_grad_(False)
    model = DDP(online)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    torch.manual_seed(1 + dist.get_rank())
    for step in range(3):
        x = torch.randn(6, 8)
        v1, v2 = x + 0.1 * torch.randn_like(x), x + 0.1 * torch.randn_like(x)
        with torch.no_grad():
            t1, t2 = target(v1), target(v2)
        opt.zero_grad()
        loss1 = regression(model(v1), t2)
        loss1.backward()
        loss2 = regression(model(v2), t1)
        loss2.backward()
        opt.step()
    print(f"rank {dist.get_rank()} loss {(loss1 + loss2).item():.6f}")
    del model, opt
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
