# A gated block (GLU / squeeze-and-excitation style) that rescales its
# sigmoid gate in place inside the module's forward: sigmoid saved its
# result for backward, so the training loop's backward through the forward's
# output fails on every torch ("output 0 of SigmoidBackward0 ... is at
# version 1"). The out-of-place spelling (gate = gate.mul(2)) trains.
import gc

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


class GatedBlock(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.fc = nn.Linear(dim, 16)
        self.gate_fc = nn.Linear(dim, 16)
        self.head = nn.Linear(16, 3)

    def forward(self, x):
        h = torch.relu(self.fc(x))
        gate = torch.sigmoid(self.gate_fc(x))
        gate.mul_(2)  # corpus: expect here
        return self.head(h * gate)


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = DDP(GatedBlock())
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
