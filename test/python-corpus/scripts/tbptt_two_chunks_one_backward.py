# Truncated BPTT with k1 < k2: two chunks are forwarded before each backward
# (the hidden state is not detached between them), as in BPTT(k1, k2)
# schemes; the second chunk's forward broadcasts over the first's saved
# BatchNorm statistics.
import gc

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


class SeqModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(4, 8, batch_first=True)
        self.bn = nn.BatchNorm1d(8)
        self.out = nn.Linear(8, 1)

    def forward(self, x, h):
        y, h = self.rnn(x, h)
        return self.out(self.bn(y.reshape(-1, 8))), h


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = DDP(SeqModel())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    torch.manual_seed(1 + dist.get_rank())
    seq = torch.randn(3, 16, 4)
    h = torch.zeros(1, 3, 8)
    for start in range(0, 16, 8):
        h = h.detach()
        out_a, h = model(seq[:, start:start + 4], h)
        out_b, h = model(seq[:, start + 4:start + 8], h)  # corpus: expect here
        loss = out_a.pow(2).mean() + out_b.pow(2).mean()
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
