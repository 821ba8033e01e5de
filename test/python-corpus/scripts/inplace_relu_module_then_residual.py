# A residual added in place after nn.ReLU(inplace=True) (h = act(fc(x));
# h += skip(x), as ResNet-style MLP blocks write it): relu_ saved its result
# for backward, and `+=` writes it, so the backward fails on every torch.
# The out-of-place spelling (h = h + skip(x)) trains.
import gc

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


class ResidualMLP(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.fc = nn.Linear(dim, 16)
        self.skip = nn.Linear(dim, 16)
        self.act = nn.ReLU(inplace=True)
        self.head = nn.Linear(16, 3)

    def forward(self, x):
        h = self.act(self.fc(x))
        h += self.skip(x)  # corpus: expect here
        return self.head(h)


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = DDP(ResidualMLP())
    opt = torch.optim.SGD(model.parameters(), lr=1e-2)
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
