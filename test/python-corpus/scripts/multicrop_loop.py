# SwAV-style multi-crop written as a loop: one forward per crop, all outputs
# kept for one loss and one backward (facebookresearch/swav groups crops by
# resolution; a loop over crops is the common first version).
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
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    torch.manual_seed(1 + dist.get_rank())
    for step in range(3):
        x = torch.randn(6, 8)
        crops = [x + 0.1 * torch.randn_like(x) for _ in range(4)]
        outs = []
        for crop in crops:
            outs.append(model(crop))  # corpus: expect here
        z = torch.stack(outs)
        loss = (z - z.mean(0, keepdim=True)).pow(2).mean()
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
