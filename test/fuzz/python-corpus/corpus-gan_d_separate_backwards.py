# The PyTorch DCGAN example (pytorch/examples, dcgan/main.py): errD_real is
# backpropagated before the fake batch goes through the discriminator, so
# every DDP forward is followed by its own backward.
import gc

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    netG = DDP(nn.Sequential(nn.Linear(4, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 8)))
    netD = DDP(nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.LeakyReLU(0.2), nn.Linear(16, 1)))
    optG = torch.optim.Adam(netG.parameters(), lr=1e-3)
    optD = torch.optim.Adam(netD.parameters(), lr=1e-3)
    torch.manual_seed(1 + dist.get_rank())
    ones, zeros = torch.ones(6, 1), torch.zeros(6, 1)
    for step in range(3):
        netD.zero_grad()
        errD_real = F.binary_cross_entropy_with_logits(netD(torch.randn(6, 8)), ones)
        errD_real.backward()
        fake = netG(torch.randn(6, 4))
        errD_fake = F.binary_cross_entropy_with_logits(netD(fake.detach()), zeros)
        errD_fake.backward()
        optD.step()
        netG.zero_grad()
        errG = F.binary_cross_entropy_with_logits(netD(fake), ones)
        errG.backward()
        optG.step()
    print(f"rank {dist.get_rank()} errD {(errD_real + errD_fake).item():.6f}")
    del netG, netD, optG, optD
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
