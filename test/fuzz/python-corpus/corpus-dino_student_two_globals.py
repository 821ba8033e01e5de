# DINO-style self-distillation (facebookresearch/dino main_dino.py before the
# multi-crop wrapper batches crops): the DDP-wrapped student runs on each
# global view in turn, the EMA teacher (outside DDP) under no_grad.
import copy
import gc

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.GELU(), nn.Linear(16, 6))
    teacher = copy.deepcopy(net)
    for p in teacher.parameters():
        p.requires_grad_(False)
    student = DDP(net)
    opt = torch.optim.SGD(student.parameters(), lr=0.1)
    torch.manual_seed(1 + dist.get_rank())
    for step in range(3):
        x = torch.randn(6, 8)
        g1, g2 = x + 0.1 * torch.randn_like(x), x + 0.1 * torch.randn_like(x)
        with torch.no_grad():
            t1, t2 = F.softmax(teacher(g1) / 0.04, 1), F.softmax(teacher(g2) / 0.04, 1)
        s1 = student(g1)
        s2 = student(g2)  # corpus: expect here
        loss = (-(t2 * F.log_softmax(s1 / 0.1, 1)).sum(1).mean()
                - (t1 * F.log_softmax(s2 / 0.1, 1)).sum(1).mean()) / 2
        opt.zero_grad()
        loss.backward()
        opt.step()
        with torch.no_grad():
            for ps, pt in zip(net.parameters(), teacher.parameters()):
                pt.mul_(0.996).add_(ps, alpha=0.004)
    print(f"rank {dist.get_rank()} loss {loss.item():.6f}")
    del student, opt
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
