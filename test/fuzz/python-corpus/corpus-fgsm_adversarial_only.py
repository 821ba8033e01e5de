# Adversarial training on adversarial examples only (Madry et al. 2018 with
# one FGSM step; "fast is better than free", locuslab/fast_adversarial): the
# attack's forward graph is consumed by autograd.grad before the training
# forward, which alone is backpropagated.
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
        x, y = torch.randn(6, 8), torch.randint(0, 5, (6,))
        delta = torch.zeros_like(x).requires_grad_(True)
        attack_loss = F.cross_entropy(model(x + delta), y)
        grad, = torch.autograd.grad(attack_loss, delta)
        x_adv = (x + 0.1 * grad.sign()).detach()
        loss = F.cross_entropy(model(x_adv), y)
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
