# A Lightning-style module with manual optimisation, as Lightning Fabric and
# the LightningModule GAN examples write it: training_step(batch, batch_idx)
# runs the DDP-wrapped discriminator on fake and real, then
# self.manual_backward(loss) (Lightning's docs, "Manual Optimization").
import gc

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


class LitGAN:
    def __init__(self):
        self.generator = DDP(nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 8)))
        self.discriminator = DDP(nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16),
                                               nn.LeakyReLU(0.2), nn.Linear(16, 1)))
        self.opt_d = torch.optim.Adam(self.discriminator.parameters(), lr=1e-3)

    def manual_backward(self, loss):
        loss.backward()

    def training_step(self, batch, batch_idx):
        real = batch
        fake = self.generator(torch.randn(real.shape[0], 4)).detach()
        d_real = self.discriminator(real)
        d_fake = self.discriminator(fake)  # corpus: expect here
        loss = F.softplus(-d_real).mean() + F.softplus(d_fake).mean()
        self.opt_d.zero_grad()
        self.manual_backward(loss)
        self.opt_d.step()
        return loss.detach()


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    module = LitGAN()
    torch.manual_seed(1 + dist.get_rank())
    for batch_idx in range(3):
        loss = module.training_step(torch.randn(6, 8), batch_idx)
    print(f"rank {dist.get_rank()} loss {loss.item():.6f}")
    del module
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
