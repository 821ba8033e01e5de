# Lazy R1 as rosinality/stylegan2-pytorch's train.py does it: every
# d_reg_every steps a separate step runs D on real images alone, takes the
# R1 gradient and backpropagates it; each D forward has its own backward.
import gc

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    G = DDP(nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 8)))
    D = DDP(nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.LeakyReLU(0.2), nn.Linear(16, 1)))
    opt_d = torch.optim.Adam(D.parameters(), lr=1e-3)
    torch.manual_seed(1 + dist.get_rank())
    for step in range(4):
        real = torch.randn(6, 8)
        with torch.no_grad():
            fake = G(torch.randn(6, 4))
        opt_d.zero_grad()
        loss_d = F.softplus(-D(real)).mean()
        loss_d.backward()
        loss_f = F.softplus(D(fake)).mean()
        loss_f.backward()
        opt_d.step()
        if step % 2 == 0:
            real.requires_grad_(True)
            real_pred = D(real)
            grad_real, = torch.autograd.grad(real_pred.sum(), real, create_graph=True)
            r1 = grad_real.pow(2).sum(1).mean()
            opt_d.zero_grad()
            (5 * r1 * 2 + 0 * real_pred[0]).sum().backward()
            opt_d.step()
    print(f"rank {dist.get_rank()} loss_d {loss_d.item():.6f}")
    del G, D, opt_d
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
