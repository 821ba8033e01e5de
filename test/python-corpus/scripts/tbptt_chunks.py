# Truncated backpropagation through time: a sequence model (BatchNorm over
# features) run chunk by chunk, the hidden state detached at each boundary
# and the loss backpropagated once per chunk (pytorch/examples
# word_language_model's repackage_hidden loop).
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
    seq, target = torch.randn(3, 12, 4), torch.randn(3 * 12, 1)
    h = torch.zeros(1, 3, 8)
    for start in range(0, 12, 4):
        h = h.detach()
        out, h = model(seq[:, start:start + 4], h)
        loss = (out - target.view(3, 12, 1)[:, start:start + 4].reshape(-1, 1)).pow(2).mean()
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
