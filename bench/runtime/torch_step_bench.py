"""PyTorch's DDP on the model and step of step_bench.cpp (Gloo, one process
per rank under torchrun):
    torch_step_bench.py STEPS HIDDEN BATCH
prints py_step_ms=<mean ms per step> from rank 0."""
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


class Mlp(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.fc1 = nn.Linear(hidden // 4, hidden)
        self.bn1 = nn.BatchNorm1d(hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.bn2 = nn.BatchNorm1d(hidden)
        self.fc3 = nn.Linear(hidden, hidden // 4)

    def forward(self, x):
        x = torch.relu(self.bn1(self.fc1(x)))
        x = torch.relu(self.bn2(self.fc2(x)))
        return self.fc3(x)


def run_steps(ddp, opt, x, steps):
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(steps):
        opt.zero_grad()
        ddp(x).pow(2).mean().backward()
        opt.step()
    dist.barrier()
    return time.perf_counter() - t0


def main():
    steps, hidden, batch = (int(a) for a in sys.argv[1:4])
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    x = torch.randn(batch, hidden // 4)
    model = Mlp(hidden)
    ddp = DDP(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    run_steps(ddp, opt, x, 5)
    py = run_steps(ddp, opt, x, steps) / steps
    if dist.get_rank() == 0:
        print(f"py_step_ms={py * 1e3:.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
