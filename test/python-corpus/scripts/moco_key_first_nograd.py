# The same shortcut with the no-grad key forward first: it saves nothing for
# backward, and the query forward that follows is the only graph the
# backward needs.
import gc

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    encoder = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 4))
    model = DDP(encoder)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    torch.manual_seed(1 + dist.get_rank())
    for step in range(3):
        x = torch.randn(6, 8)
        with torch.no_grad():
            k = F.normalize(model(x + 0.1 * torch.randn_like(x)), dim=1)
        q = F.normalize(model(x + 0.1 * torch.randn_like(x)), dim=1)
        loss = F.cross_entropy(q @ k.t() / 0.2, torch.arange(6))
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
