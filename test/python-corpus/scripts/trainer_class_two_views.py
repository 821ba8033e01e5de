# A trainer class that owns the DDP model (self.model = DDP(...) in
# __init__) and a contrastive train_step with two views (the shape of
# solo-learn's and VISSL's method classes).
import gc

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self, net, lr):
        self.model = DDP(net)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=lr)

    def train_step(self, x):
        z1 = F.normalize(self.model(x + 0.1 * torch.randn_like(x)), dim=1)
        z2 = F.normalize(self.model(x + 0.1 * torch.randn_like(x)), dim=1)  # corpus: expect here
        loss = -(z1 * z2).sum(1).mean()
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        return loss.item()

    def close(self):
        del self.model, self.opt


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    trainer = Trainer(nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 4)), 0.1)
    torch.manual_seed(1 + dist.get_rank())
    for step in range(3):
        loss = trainer.train_step(torch.randn(6, 8))
    print(f"rank {dist.get_rank()} loss {loss:.6f}")
    trainer.close()
    del trainer
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
