# A model that normalises its input with registered mean/std buffers
# ((x - self.mean) / self.std, as timm and torchvision's transforms-in-model
# wrappers do) and no BatchNorm; two views before one backward. The input
# does not require grad, so the normalisation records no graph and saves no
# buffer: the broadcast overwrites nothing a backward needs.
import gc

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Normalized(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("mean", torch.zeros(8))
        self.register_buffer("std", torch.ones(8) * 2)
        self.net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))

    def forward(self, x):
        return self.net((x - self.mean) / self.std)


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = DDP(Normalized())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    torch.manual_seed(1 + dist.get_rank())
    for step in range(3):
        x = torch.randn(6, 8)
        z1 = model(x + 0.1 * torch.randn_like(x))
        z2 = model(x + 0.1 * torch.randn_like(x))
        loss = (z1 - z2).pow(2).mean()
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
