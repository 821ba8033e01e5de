# The Pi-model (Laine & Aila 2017): every batch goes through the network twice
# with different augmentation and dropout, a consistency loss between the
# two, one backward.
import gc

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.2), nn.Linear(16, 5))
    model = DDP(net)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    torch.manual_seed(1 + dist.get_rank())
    for step in range(3):
        x, y = torch.randn(6, 8), torch.randint(0, 5, (6,))
        z1 = model(x + 0.1 * torch.randn_like(x))
        z2 = model(x + 0.1 * torch.randn_like(x))  # corpus: expect here
        loss = F.cross_entropy(z1, y) + F.mse_loss(F.softmax(z1, 1), F.softmax(z2, 1))
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
