# The per-step recurrent loop with a plain GRUCell and a LayerNorm: the
# DDP-wrapped module has no buffers, so DDP broadcasts none before the
# forwards and one backward through all steps is fine.
import gc

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Cell(nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = nn.GRUCell(4, 8)
        self.norm = nn.LayerNorm(8)

    def forward(self, x, h):
        return self.norm(self.gru(x, h))


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    cell = DDP(Cell())
    opt = torch.optim.SGD(cell.parameters(), lr=0.1)
    torch.manual_seed(1 + dist.get_rank())
    for step in range(2):
        seq, target = torch.randn(5, 6, 4), torch.randn(6, 8)
        h = torch.zeros(6, 8)
        for t in range(seq.shape[0]):
            h = cell(seq[t], h)
        loss = (h - target).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"rank {dist.get_rank()} loss {loss.item():.6f}")
    del cell, opt
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
