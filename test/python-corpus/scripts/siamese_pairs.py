# A Siamese network on image pairs with a contrastive loss (Hadsell et al.
# 2006; the pytorch/examples siamese_network example): both inputs of a pair
# through the same DDP-wrapped tower, one backward.
import gc

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Tower(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(self.conv(x).flatten(1))


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    tower = DDP(Tower())
    opt = torch.optim.SGD(tower.parameters(), lr=0.1)
    torch.manual_seed(1 + dist.get_rank())
    for step in range(3):
        a, b = torch.randn(4, 1, 6, 6), torch.randn(4, 1, 6, 6)
        same = torch.randint(0, 2, (4,)).float()
        ea = tower(a)
        eb = tower(b)  # corpus: expect here
        d = F.pairwise_distance(ea, eb)
        loss = (same * d.pow(2) + (1 - same) * F.relu(1.0 - d).pow(2)).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"rank {dist.get_rank()} loss {loss.item():.6f}")
    del tower, opt
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
