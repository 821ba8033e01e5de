# A supervised trainer class (self.model = DDP(...) in __init__, a step
# method with one forward, loss.backward(), optimizer.step()), as in
# pytorch/examples' distributed tutorials.
import gc

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Trainer:
    def __init__(self, net):
        self.model = DDP(net)
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=0.1)

    def _run_batch(self, source, targets):
        self.optimizer.zero_grad()
        loss = F.cross_entropy(self.model(source), targets)
        loss.backward()
        self.optimizer.step()
        return loss.item()

    def train(self, batches):
        return [self._run_batch(x, y) for x, y in batches]


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    trainer = Trainer(nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 5)))
    torch.manual_seed(1 + dist.get_rank())
    losses = trainer.train([(torch.randn(6, 8), torch.randint(0, 5, (6,))) for _ in range(3)])
    print(f"rank {dist.get_rank()} loss {losses[-1]:.6f}")
    del trainer
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
