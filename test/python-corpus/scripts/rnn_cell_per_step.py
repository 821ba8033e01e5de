# A recurrent cell called once per time step through DDP, one backward over
# the sequence's loss; the cell normalises with BatchNorm (recurrent batch
# normalisation, Cooijmans et al. 2016, and the per-step cell loops of
# pytorch/examples' word_language_model written with nn.*Cell).
import gc

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


class BNCell(nn.Module):
    def __init__(self):
        super().__init__()
        self.ih = nn.Linear(4, 8)
        self.hh = nn.Linear(8, 8, bias=False)
        self.bn = nn.BatchNorm1d(8)

    def forward(self, x, h):
        return torch.tanh(self.bn(self.ih(x) + self.hh(h)))


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    cell = DDP(BNCell())
    head = nn.Linear(8, 1)
    opt = torch.optim.SGD(list(cell.parameters()) + list(head.parameters()), lr=0.1)
    torch.manual_seed(1 + dist.get_rank())
    for step in range(2):
        seq, target = torch.randn(5, 6, 4), torch.randn(6, 1)
        h = torch.zeros(6, 8)
        for t in range(seq.shape[0]):
            h = cell(seq[t], h)  # corpus: expect here
        loss = (head(h) - target).pow(2).mean()
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
