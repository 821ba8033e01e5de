# Lightning's automatic optimisation as its DDP strategy runs it: the
# LightningModule is wrapped so that DDP's forward calls training_step
# (lightning's _LightningModuleWrapperBase), so each step is one DDP forward
# and one backward of the returned loss.
import gc

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


class LitClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 5))

    def training_step(self, batch, batch_idx):
        x, y = batch
        return F.cross_entropy(self.net(x), y)


class StepWrapper(nn.Module):
    def __init__(self, module):
        super().__init__()
        self.module = module

    def forward(self, batch, batch_idx):
        return self.module.training_step(batch, batch_idx)


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    lit = LitClassifier()
    model = DDP(StepWrapper(lit))
    opt = torch.optim.SGD(lit.parameters(), lr=0.1)
    torch.manual_seed(1 + dist.get_rank())
    for batch_idx in range(3):
        batch = (torch.randn(6, 8), torch.randint(0, 5, (6,)))
        loss = model(batch, batch_idx)
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
