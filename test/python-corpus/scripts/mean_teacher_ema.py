# Mean Teacher (Tarvainen & Valpola 2017, CuriousAI/mean-teacher): the EMA
# teacher is a plain module outside DDP under no_grad; the DDP student runs
# once per step.
import copy
import gc

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 5))
    ema = copy.deepcopy(net)
    model = DDP(net)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    torch.manual_seed(1 + dist.get_rank())
    for step in range(3):
        x, y = torch.randn(6, 8), torch.randint(0, 5, (6,))
        out = model(x + 0.1 * torch.randn_like(x))
        with torch.no_grad():
            t = ema(x + 0.1 * torch.randn_like(x))
        loss = F.cross_entropy(out, y) + F.mse_loss(F.softmax(out, 1), F.softmax(t, 1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        with torch.no_grad():
            for pe, p in zip(ema.parameters(), net.parameters()):
                pe.mul_(0.99).add_(p, alpha=0.01)
    print(f"rank {dist.get_rank()} loss {loss.item():.6f}")
    del model, opt
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
