"""A forward past DDP, on the module it wraps (issue 28, item 7):
model.module(x) saves BatchNorm's buffers without a broadcast, so a later
DDP forward's broadcast overwrites them before the backward; the other order
trains. `python bypass.py` runs both on one Gloo rank and prints whether each
trains."""
import os
import sys

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def module_then_ddp(model, s, q):
    z_s = model.module(s)
    z_q = model(q)
    (z_s.sum() + z_q.sum()).backward()


def ddp_then_module(model, s, q):
    z_q = model(q)
    z_s = model.module(s)
    (z_s.sum() + z_q.sum()).backward()


if __name__ == "__main__":
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    dist.init_process_group("gloo", rank=0, world_size=1)
    for step in (module_then_ddp, ddp_then_module):
        model = DDP(nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4)))
        try:
            step(model, torch.randn(2, 4), torch.randn(2, 4))
            print(step.__name__, "trains")
        except RuntimeError as e:
            print(step.__name__, "fails" if "modified by an inplace operation" in str(e) else e)
    dist.destroy_process_group()
    sys.exit(0)
