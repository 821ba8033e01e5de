# GAN discriminator step with the fake and the real batch through the
# DDP-wrapped discriminator (BatchNorm, as in DCGAN) before one backward of
# the summed loss (pytorch/pytorch#65907; eriklindernoren/PyTorch-GAN
# computes real_loss and fake_loss, then (real_loss + fake_loss) / 2).
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
    ones, zeros = torch.ones(6, 1), torch.zeros(6, 1)
    for step in range(3):
        real = torch.randn(6, 8)
        fake = G(torch.randn(6, 4))
        d_fake = D(fake.detach())
        d_real = D(real)  # corpus: expect here
        loss_d = (F.binary_cross_entropy_with_logits(d_fake, zeros)
                  + F.binary_cross_entropy_with_logits(d_real, ones)) / 2
        opt_d.zero_grad()
        loss_d.backward()
        opt_d.step()
        loss_g = F.binary_cross_entropy_with_logits(D(fake), ones)
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
