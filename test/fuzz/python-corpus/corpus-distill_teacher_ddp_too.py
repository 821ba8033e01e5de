# Distillation where the launcher wraps every model in DDP, the teacher too
# (a common result of a generic `wrap(model)` helper): two DDP objects, one
# forward each per step, the teacher's under no_grad.
import gc

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def wrap(module):
    return DDP(module)


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    teacher = wrap(nn.Sequential(nn.Linear(8, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 5)))
    student = wrap(nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 5)))
    for p in teacher.parameters():
        p.requires_grad_(False)
    opt = torch.optim.SGD(student.parameters(), lr=0.1)
    torch.manual_seed(1 + dist.get_rank())
    for step in range(3):
        x = torch.randn(6, 8)
        s_logits = student(x)
        with torch.no_grad():
            t_logits = teacher(x)
        loss = F.kl_div(F.log_softmax(s_logits, 1), F.softmax(t_logits, 1), reduction="batchmean")
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"rank {dist.get_rank()} loss {loss.item():.6f}")
    del teacher, student, opt
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
