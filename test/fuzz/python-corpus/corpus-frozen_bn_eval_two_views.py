# Fine-tuning with frozen BatchNorm (model.eval() for the BN layers while
# training, as detectron2's FrozenBN-style fine-tuning and small-batch
# recipes do) on a two-view step: in eval mode BatchNorm still saves its
# running statistics for backward.
import gc

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 4))
    model = DDP(net)
    model.eval()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    torch.manual_seed(1 + dist.get_rank())
    for step in range(3):
        x = torch.randn(6, 8)
        z1 = model(x + 0.1 * torch.randn_like(x))
        z2 = model(x + 0.1 * torch.randn_like(x))  # corpus: expect here
        loss = (z1 - z2).pow(2).mean()
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
