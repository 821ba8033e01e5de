"""PyTorch's own DistributedDataParallel (torch 2.11 wheel, Gloo) on the
model, weights, data and steps of differential_tests.cpp. Run one process per
rank under torchrun (env:// rendezvous on its agent store):

    torch_reference.py SCENARIO OUT_DIR

writes OUT_DIR/rank<R>.txt: one line per parameter and buffer after the
steps ("name v1 v2 ..."), or one line "error <message>" if a step raised.
"""
import gc
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = 3


class Net(nn.Module):
    # Registration order matches the C++ NetImpl: fc1, fc2, then bn1.
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 3)
        self.bn1 = nn.BatchNorm1d(8)

    def forward(self, x):
        return self.fc2(torch.relu(self.bn1(self.fc1(x))))


class Group(nn.Module):
    """The forward_group equivalent: one DDP forward, the inner module once
    per input."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, *xs):
        return tuple(self.inner(x) for x in xs)


def init_weights(module, offset):
    with torch.no_grad():
        for k, p in enumerate(module.parameters()):
            flat = torch.arange(p.numel(), dtype=torch.double)
            p.copy_((0.5 * torch.sin(0.7 * flat + 1.3 * k + 0.1) + offset)
                    .to(p.dtype).view(p.shape))


def views(step, rank):
    torch.manual_seed(1000 * step + rank)
    x1 = torch.randn(6, 4)
    x2 = torch.randn(6, 4)
    return x1, x2


def two_view_loss(z1, z2):
    return (z1 - z2).pow(2).mean() + 0.1 * z1.mean()


def main():
    scenario, out_dir = sys.argv[1], sys.argv[2]
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    net = Net()
    init_weights(net, 0.01 * rank)
    inner = net
    if scenario in ("forward_group", "once_per_backward"):
        net = Group(net)
    ddp = DDP(net, broadcast_buffers=(scenario != "broadcast_off"))
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    lines = []
    try:
        for step in range(STEPS):
            x1, x2 = views(step, rank)
            opt.zero_grad()
            if scenario == "standard":
                ddp(x1).pow(2).mean().backward()
            elif scenario == "no_sync":
                with ddp.no_sync():
                    ddp(x1).pow(2).mean().backward()
                ddp(x2).pow(2).mean().backward()
            elif scenario in ("forward_group", "once_per_backward"):
                z1, z2 = ddp(x1, x2)
                two_view_loss(z1, z2).backward()
            elif scenario in ("broadcast_off", "two_forwards"):
                z1 = ddp(x1)
                z2 = ddp(x2)
                two_view_loss(z1, z2).backward()
            else:
                raise SystemExit("unknown scenario " + scenario)
            opt.step()
        for name, t in list(inner.named_parameters()) + list(inner.named_buffers()):
            values = " ".join(repr(float(v)) for v in t.detach().reshape(-1).tolist())
            lines.append(f"{name} {values}")
    except RuntimeError as e:
        lines = ["error " + str(e).splitlines()[0]]
    with open(os.path.join(out_dir, f"rank{rank}.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    # Gloo can abort a rank that finalizes with its group alive ("terminate
    # called without an active exception", test/python/test_explain.py says
    # why): the DDP is collected, so that the group dies in
    # destroy_process_group, once every rank got there.
    del ddp, opt
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
