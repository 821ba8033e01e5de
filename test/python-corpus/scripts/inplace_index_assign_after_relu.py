# Padding written into an activation by indexed assignment (h[:, 0] = 0,
# as sequence models zero a padded position) after relu, which saved its
# result for backward: the training step's backward fails on every torch.
# No out-of-place spelling of an indexed assignment is offered.
import gc

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    encoder = DDP(nn.Linear(8, 16))
    head = nn.Linear(16, 3)
    opt = torch.optim.SGD(list(encoder.parameters()) + list(head.parameters()), lr=1e-2)
    torch.manual_seed(1 + dist.get_rank())
    for step in range(3):
        x, y = torch.randn(6, 8), torch.randint(0, 3, (6,))
        h = torch.relu(encoder(x))
        h[:, 0] = 0  # corpus: expect here
        loss = F.cross_entropy(head(h), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"rank {dist.get_rank()} loss {loss.item():.6f}")
    del encoder, head, opt
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
