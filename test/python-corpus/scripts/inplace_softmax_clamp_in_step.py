# Probabilities clamped in place before a log (a hand-written cross entropy
# or focal loss): softmax saved its result for backward, so the training
# step's backward fails on every torch. The out-of-place spelling
# (probs = probs.clamp(min=1e-6)) trains.
import gc

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 3)))
    opt = torch.optim.SGD(model.parameters(), lr=1e-2)
    torch.manual_seed(1 + dist.get_rank())
    for step in range(3):
        x = torch.randn(6, 8)
        target = torch.nn.functional.one_hot(torch.randint(0, 3, (6,)), 3).float()
        probs = torch.softmax(model(x), dim=-1)
        probs.clamp_(min=1e-6)  # corpus: expect here
        loss = -(target * probs.log()).sum(dim=-1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"rank {dist.get_rank()} loss {loss.item():.6f}")
    del model, opt
    gc.collect()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
