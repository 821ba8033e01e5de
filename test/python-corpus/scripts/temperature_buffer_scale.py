# A projection head that scales its output by a fixed temperature kept as a
# registered buffer (CLIP-style logit scale frozen with register_buffer; no
# BatchNorm anywhere); two views before one backward. The multiplication
# saves the buffer, because the other factor requires grad.
import gc

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


class ScaledHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
        self.register_buffer("scale", torch.full((4,), 1 / 0.07))

    def forward(self, x):
        return F.normalize(self.net(x), dim=1) * self.scale


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = DDP(ScaledHead())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    torch.manual_seed(1 + dist.get_rank())
    for step in range(3):
        x = torch.randn(6, 8)
        z1 = model(x + 0.1 * torch.randn_like(x))
        z2 = model(x + 0.1 * torch.randn_like(x))  # corpus: expect here
        loss = F.cross_entropy(z1 @ z2.t(), torch.arange(6))
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
