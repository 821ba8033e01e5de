# The same GAN with a fused Adam for the discriminator: a fused step updates
# the weights without bumping their version counters, so G's backward runs
# (with the new weights, silently): it trains; only silent-write-before-backward reports it.
import gc

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    netG = DDP(nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 8)))
    netD = DDP(nn.Sequential(nn.Linear(8, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1)))
    optG = torch.optim.Adam(netG.parameters(), lr=1e-3)
    optD = torch.optim.Adam(netD.parameters(), lr=1e-3, fused=True)
    torch.manual_seed(1 + dist.get_rank())
    ones, zeros = torch.ones(6, 1), torch.zeros(6, 1)
    for step in range(3):
        fake = netG(torch.randn(6, 4))
        d_fake = netD(fake)
        d_real = netD(torch.randn(6, 8))
        lossD = (F.binary_cross_entropy_with_logits(d_real, ones)
                 + F.binary_cross_entropy_with_logits(d_fake, zeros))
        optD.zero_grad()
        lossD.backward(retain_graph=True)
        optD.step()
        lossG = F.binary_cross_entropy_with_logits(d_fake, ones)
        optG.zero_grad()
        lossG.backward()
        optG.step()
    print(f"rank {dist.get_rank()} lossD {lossD.item():.6f}")
    del netG, netD, optG, optD
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
