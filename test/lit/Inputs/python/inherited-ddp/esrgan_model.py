import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from gan_model import GANModel


class ESRGANModel(GANModel):
    def two_forwards(self, real, fake):
        real_pred = self.net_d(real)
        fake_pred = self.net_d(fake)
        loss = (real_pred - fake_pred.mean()).mean()
        self.optimizer_d.zero_grad()
        loss.backward()
        self.optimizer_d.step()

    def one_forward(self, real, fake):
        real_pred, fake_pred = self.net_d(torch.cat([real, fake])).chunk(2)
        loss = (real_pred - fake_pred.mean()).mean()
        self.optimizer_d.zero_grad()
        loss.backward()
        self.optimizer_d.step()


def run(rank, name):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29533")
    dist.init_process_group("gloo", rank=rank, world_size=2)
    model = ESRGANModel({"dist": True})
    getattr(model, name)(torch.randn(4, 4), torch.randn(4, 4))
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(run, args=(sys.argv[1],), nprocs=2)
