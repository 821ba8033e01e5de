# MoCo v2 (facebookresearch/moco, moco/builder.py): the query encoder is
# DDP-wrapped, the key encoder is a momentum copy run under no_grad outside
# DDP; one DDP forward per backward.
import copy
import gc

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    encoder_q = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 4))
    encoder_k = copy.deepcopy(encoder_q)
    for p in encoder_k.parameters():
        p.requires_grad_(False)
    model = DDP(encoder_q)
    queue = F.normalize(torch.randn(16, 4), dim=1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    torch.manual_seed(1 + dist.get_rank())
    for step in range(3):
        x = torch.randn(6, 8)
        q = F.normalize(model(x + 0.1 * torch.randn_like(x)), dim=1)
        with torch.no_grad():
            for pq, pk in zip(encoder_q.parameters(), encoder_k.parameters()):
                pk.mul_(0.99).add_(pq, alpha=0.01)
            k = F.normalize(encoder_k(x + 0.1 * torch.randn_like(x)), dim=1)
        logits = torch.cat([(q * k).sum(1, keepdim=True), q @ queue.t()], dim=1) / 0.2
        loss = F.cross_entropy(logits, torch.zeros(6, dtype=torch.long))
        opt.zero_grad()
        loss.backward()
        opt.step()
        queue = torch.cat([k, queue])[:16]
    print(f"rank {dist.get_rank()} loss {loss.item():.6f}")
    del model, opt
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
