# Adversarial training with a mixed clean/adversarial loss (Goodfellow et al.
# 2015, FGSM): the clean forward's input gradient (retain_graph) makes the
# adversarial example, which goes through the model before one backward of
# the summed loss.
import gc

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 5)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    torch.manual_seed(1 + dist.get_rank())
    for step in range(3):
        x, y = torch.randn(6, 8).requires_grad_(True), torch.randint(0, 5, (6,))
        clean_loss = F.cross_entropy(model(x), y)
        grad_x, = torch.autograd.grad(clean_loss, x, retain_graph=True)
        x_adv = (x + 0.1 * grad_x.sign()).detach()
        adv_loss = F.cross_entropy(model(x_adv), y)  # corpus: expect here
        loss = 0.5 * clean_loss + 0.5 * adv_loss
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
