"""Models that accelerate's Accelerator.prepare hands back wrapped in
DistributedDataParallel (issue 28, paintmind). `torchrun --nproc-per-node 2
train.py` runs each step on CPU (accelerate 1.2.1) and prints whether it
trains."""
import sys

import torch
from accelerate import Accelerator
from accelerate.utils import DistributedDataParallelKwargs
from torch import nn


def critic():
    return nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 1))


def two_forwards():
    accelerator = Accelerator(cpu=True)
    d, opt = critic(), None
    opt = torch.optim.SGD(d.parameters(), lr=0.1)
    d, opt = accelerator.prepare(d, opt)
    fake, real = torch.randn(4, 4), torch.randn(4, 4)
    loss = d(fake).mean() - d(real).mean()
    accelerator.backward(loss)
    opt.step()


def broadcast_off():
    handler = DistributedDataParallelKwargs(broadcast_buffers=False)
    accelerator = Accelerator(cpu=True, kwargs_handlers=[handler])
    d = accelerator.prepare(critic())
    loss = d(torch.randn(4, 4)).mean() - d(torch.randn(4, 4)).mean()
    accelerator.backward(loss)


class Trainer:
    def __init__(self):
        self.accelerator = Accelerator(cpu=True)
        self.d = critic()
        self.opt = torch.optim.SGD(self.d.parameters(), lr=0.1)
        (self.d, self.opt) = self.accelerator.prepare(self.d, self.opt)

    def step(self):
        fake = self.d(torch.randn(4, 4))
        real = self.d(torch.randn(4, 4))
        self.accelerator.backward(fake.mean() - real.mean())

    def step_once(self):
        self.accelerator.backward(self.d(torch.randn(8, 4)).mean())


if __name__ == "__main__":
    for name, run in [("two_forwards", two_forwards), ("broadcast_off", broadcast_off),
                      ("Trainer.step", lambda: Trainer().step()),
                      ("Trainer.step_once", lambda: Trainer().step_once())]:
        try:
            run()
            print(name, "trains")
        except RuntimeError as e:
            print(name, "fails" if "modified by an inplace operation" in str(e) else e)
    sys.exit(0)
