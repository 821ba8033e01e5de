# A trainer whose two-view step goes through a helper method that runs the
# DDP model (self.encode(view) for each view), one backward.
import gc

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


class SiameseTrainer:
    def __init__(self, net):
        self.model = DDP(net)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def encode(self, view):
        return F.normalize(self.model(view), dim=1)  # corpus: expect here

    def step(self, x):
        z1 = self.encode(x + 0.1 * torch.randn_like(x))
        z2 = self.encode(x + 0.1 * torch.randn_like(x))  # corpus: expect here
        loss = -(z1 * z2).sum(1).mean()
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        return loss.item()


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    trainer = SiameseTrainer(nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 4)))
    torch.manual_seed(1 + dist.get_rank())
    for step in range(3):
        loss = trainer.step(torch.randn(6, 8))
    print(f"rank {dist.get_rank()} loss {loss:.6f}")
    del trainer
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
