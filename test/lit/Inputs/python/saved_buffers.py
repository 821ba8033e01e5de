import os
import sys

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


class PositionIds(nn.Module):
    def __init__(self):
        super().__init__()
        self.pos = nn.Embedding(8, 4)
        self.register_buffer("position_ids", torch.arange(8))

    def forward(self, x):
        return x + self.pos(self.position_ids)


class RelativeIndex(nn.Module):
    def __init__(self):
        super().__init__()
        self.table = nn.Parameter(torch.randn(15, 4))
        self.register_buffer("relative_position_index", torch.arange(8) % 15)

    def forward(self, x):
        return x + self.table[self.relative_position_index]


class Rotary(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.register_buffer("cos_cached", torch.rand(8, 4))

    def forward(self, x):
        return self.fc(x) * self.cos_cached


class Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, s):
        ctx.save_for_backward(s)
        return x * s

    @staticmethod
    def backward(ctx, g):
        (s,) = ctx.saved_tensors
        return g * s, None


class CustomFunction(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.register_buffer("scale", torch.rand(4))

    def forward(self, x):
        return Scale.apply(self.fc(x), self.scale)


class Normalise(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.register_buffer("mean", torch.rand(4))
        self.register_buffer("std", torch.rand(4) + 1)

    def forward(self, x):
        return self.fc((x - self.mean) / self.std)


class Frozen(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.register_buffer("weight", torch.ones(4))
        self.register_buffer("bias", torch.zeros(4))
        self.register_buffer("running_mean", torch.zeros(4))
        self.register_buffer("running_var", torch.ones(4))

    def forward(self, x):
        scale = self.weight * (self.running_var + 1e-5).rsqrt()
        bias = self.bias - self.running_mean * scale
        return self.fc(x) * scale + bias


def init():
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    dist.init_process_group("gloo", rank=0, world_size=1)


def position_ids():
    init()
    model = DDP(PositionIds())
    a = model(torch.randn(8, 4))
    b = model(torch.randn(8, 4))
    (a.sum() + b.sum()).backward()


def relative_index():
    init()
    model = DDP(RelativeIndex())
    a = model(torch.randn(8, 4))
    b = model(torch.randn(8, 4))
    (a.sum() + b.sum()).backward()


def rotary():
    init()
    model = DDP(Rotary())
    a = model(torch.randn(8, 4))
    b = model(torch.randn(8, 4))
    (a.sum() + b.sum()).backward()


def custom_function():
    init()
    model = DDP(CustomFunction())
    a = model(torch.randn(8, 4))
    b = model(torch.randn(8, 4))
    (a.sum() + b.sum()).backward()


def normalise():
    init()
    model = DDP(Normalise())
    a = model(torch.randn(8, 4))
    b = model(torch.randn(8, 4))
    (a.sum() + b.sum()).backward()


def frozen():
    init()
    model = DDP(Frozen())
    a = model(torch.randn(8, 4))
    b = model(torch.randn(8, 4))
    (a.sum() + b.sum()).backward()


def compiled_norms():
    init()
    model = DDP(torch.compile(nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))))
    a = model(torch.randn(8, 4))
    b = model(torch.randn(8, 4))
    (a.sum() + b.sum()).backward()


def compiled_rotary():
    init()
    model = DDP(torch.compile(Rotary()))
    a = model(torch.randn(8, 4))
    b = model(torch.randn(8, 4))
    (a.sum() + b.sum()).backward()


def compiled_outside():
    init()
    model = torch.compile(DDP(nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))))
    a = model(torch.randn(8, 4))
    b = model(torch.randn(8, 4))
    (a.sum() + b.sum()).backward()


def sync_norms():
    # Settled from torch's source, not run (it needs GPUs): with more than
    # one rank SyncBatchNorm's function saves no running statistics.
    init()
    net = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4))
    model = DDP(nn.SyncBatchNorm.convert_sync_batchnorm(net).cuda())
    a = model(torch.randn(8, 4).cuda())
    b = model(torch.randn(8, 4).cuda())
    (a.sum() + b.sum()).backward()


if __name__ == "__main__":
    globals()[sys.argv[1]]()
