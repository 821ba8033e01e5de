# BYOL: the online network (DDP, BatchNorm in the projector) sees both views,
# the momentum target network (not DDP, no grad) predicts the other view;
# symmetric loss, one backward (lucidrains/byol-pytorch's forward calls the
# online encoder once per view).
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
        p1 = model(v1)
        p2 = model(v2)  # corpus: expect here
        with torch.no_grad():
            t1, t2 = target(v1), target(v2)
        loss = regression(p1, t2) + regression(p2, t1)
        opt.zero_grad()
        loss.backward()
        opt.step()
        with torch.no_grad():
            for po, pt in zip(online.parameters(), target.parameters()):
                pt.mul_(0.99).add_(po, alpha=0.01)
    print(f"rank {dist.get_rank()} loss {loss.item():.6f}")
    del model, opt
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
