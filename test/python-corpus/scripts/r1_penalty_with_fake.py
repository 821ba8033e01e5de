# R1 regularisation (Mescheder et al. 2018; rosinality/stylegan2-pytorch's
# d_r1_loss) computed in the same step as the fake logits: D(real) with
# real.requires_grad, the R1 gradient with create_graph, then D(fake), one
# backward of the sum.
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
    opt_g = torch.optim.Adam(G.parameters(), lr=1e-3)
    opt_d = torch.optim.Adam(D.parameters(), lr=1e-3)
    torch.manual_seed(1 + dist.get_rank())
    for step in range(3):
        real = torch.randn(6, 8).requires_grad_(True)
        real_pred = D(real)
        grad_real, = torch.autograd.grad(real_pred.sum(), real, create_graph=True)
        r1 = grad_real.pow(2).sum(1).mean()
        fake_pred = D(G(torch.randn(6, 4)).detach())  # corpus: expect here
        loss_d = F.softplus(fake_pred).mean() + F.softplus(-real_pred).mean() + 5 * r1
        opt_d.zero_grad()
        loss_d.backward()
        opt_d.step()
        loss_g = F.softplus(-D(G(torch.randn(6, 4)))).mean()
        opt_g.zero_grad()
        loss_g.backward()
        opt_g.step()
    print(f"rank {dist.get_rank()} loss_d {loss_d.item():.6f}")
    del G, D, opt_g, opt_d
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
