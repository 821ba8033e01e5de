# A residual added in place (h += ...) to a tensor that a multiplication
# saved for backward (g = h * sigmoid(...) saves h for the gate's gradient),
# the shape of gated residual MLPs written with `+=`: the backward fails on
# every torch. The out-of-place spelling (h = h + ...) trains.
import gc

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


class GatedResidual(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.fc1 = nn.Linear(dim, dim)
        self.fc2 = nn.Linear(dim, dim)
        self.fc3 = nn.Linear(dim, dim)
        self.head = nn.Linear(dim, 3)

    def forward(self, x):
        h = self.fc1(x)
        g = h * torch.sigmoid(self.fc2(x))
        h += self.fc3(g)  # corpus: expect here
        return self.head(h)


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = DDP(GatedResidual())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    torch.manual_seed(1 + dist.get_rank())
    for step in range(3):
        x, y = torch.randn(6, 8), torch.randint(0, 3, (6,))
        loss = F.cross_entropy(model(x), y)
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
