# WGAN-GP critic step (Gulrajani et al.; caogang/wgan-gp, igul222's
# improved_wgan_training): critic on real, on fake, and on interpolates for
# the gradient penalty (autograd.grad with create_graph), one backward. The
# critic here has BatchNorm, as the DCGAN-style critics people start from.
import gc

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    G = DDP(nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 8)))
    C = DDP(nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.LeakyReLU(0.2), nn.Linear(16, 1)))
    opt_g = torch.optim.Adam(G.parameters(), lr=1e-4, betas=(0.5, 0.9))
    opt_c = torch.optim.Adam(C.parameters(), lr=1e-4, betas=(0.5, 0.9))
    torch.manual_seed(1 + dist.get_rank())
    for step in range(3):
        real = torch.randn(6, 8)
        fake = G(torch.randn(6, 4)).detach()
        c_real = C(real).mean()
        c_fake = C(fake).mean()  # corpus: expect here
        alpha = torch.rand(6, 1)
        interp = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
        c_interp = C(interp)  # corpus: expect here
        grad, = torch.autograd.grad(c_interp.sum(), interp, create_graph=True)
        gp = ((grad.norm(2, dim=1) - 1) ** 2).mean()
        loss_c = c_fake - c_real + 10 * gp
        opt_c.zero_grad()
        loss_c.backward()
        opt_c.step()
        loss_g = -C(G(torch.randn(6, 4))).mean()
        opt_g.zero_grad()
        loss_g.backward()
        opt_g.step()
    print(f"rank {dist.get_rank()} loss_c {loss_c.item():.6f}")
    del G, C, opt_g, opt_c
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
