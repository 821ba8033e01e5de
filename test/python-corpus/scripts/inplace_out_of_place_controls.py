# Controls: the same shapes written out of place, or in place on tensors no
# operation saved: gate = gate * 2 after sigmoid, h = h + ... after h * g,
# indexed assignment into a clone of a relu output, an in-place add on a
# Linear's output, a sigmoid of data that does not require grad scaled in
# place. All train on every torch; the checker must stay silent.
import gc

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Block(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.fc1 = nn.Linear(dim, 16)
        self.fc2 = nn.Linear(dim, 16)
        self.head = nn.Linear(16, 3)

    def forward(self, x):
        gate = torch.sigmoid(self.fc2(x))
        gate = gate * 2
        h = self.fc1(x)
        g = h * gate
        h = h + g
        r = torch.relu(h).clone()
        r[:, 0] = 0
        z = self.fc1(x)
        z.add_(1)
        return self.head(r + z)


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = DDP(Block())
    opt = torch.optim.SGD(model.parameters(), lr=1e-2)
    torch.manual_seed(1 + dist.get_rank())
    for step in range(3):
        x, y = torch.randn(6, 8), torch.randint(0, 3, (6,))
        weights = torch.sigmoid(x.sum(dim=-1))
        weights.mul_(2)
        loss = (F.cross_entropy(model(x), y, reduction="none") * weights).mean()
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
