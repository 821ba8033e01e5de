# nn.ReLU(inplace=True) applied to a sigmoid's output (an activation stack
# reordered by a config): sigmoid saved its result for backward and the
# in-place relu writes it, so the backward fails on every torch. A module's
# in-place forward has no out-of-place spelling the checker offers.
import gc

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Squashed(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.fc1 = nn.Linear(dim, 16)
        self.act = nn.ReLU(inplace=True)
        self.fc2 = nn.Linear(16, 3)

    def forward(self, x):
        h = self.act(torch.sigmoid(self.fc1(x)))  # corpus: expect here
        return self.fc2(h)


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = DDP(Squashed())
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
