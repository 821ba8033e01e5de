# R-Drop / SimCSE-style two dropout passes through a transformer-style block
# with LayerNorm only (no BatchNorm, no registered buffers): DDP has no
# buffers to broadcast, so the two forwards before one backward train.
import gc

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Block(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.ff = nn.Sequential(nn.Linear(dim, 16), nn.GELU(), nn.Dropout(0.1), nn.Linear(16, dim))
        self.head = nn.Linear(dim, 3)

    def forward(self, x):
        return self.head(x + self.ff(self.norm(x)))


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = DDP(Block())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    torch.manual_seed(1 + dist.get_rank())
    for step in range(3):
        x, y = torch.randn(6, 8), torch.randint(0, 3, (6,))
        logits1 = model(x)
        logits2 = model(x)
        p, q = F.log_softmax(logits1, -1), F.log_softmax(logits2, -1)
        kl = F.kl_div(p, q, log_target=True, reduction="batchmean")
        loss = F.cross_entropy(logits1, y) + F.cross_entropy(logits2, y) + kl
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
