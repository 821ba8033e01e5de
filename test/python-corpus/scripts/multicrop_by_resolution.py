# DINO/SwAV multi-crop (facebookresearch/dino, MultiCropWrapper): crops of
# the same resolution are concatenated, one forward per resolution group, two
# groups (global and local) before one backward.
import gc

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


class MultiCropNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = nn.AdaptiveAvgPool1d(4)
        self.body = nn.Sequential(nn.Linear(4, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 4))

    def forward(self, x):
        return self.body(self.pool(x.unsqueeze(1)).squeeze(1))


def main():
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    model = DDP(MultiCropNet())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    torch.manual_seed(1 + dist.get_rank())
    for step in range(3):
        global_crops = torch.randn(2 * 4, 12)
        local_crops = torch.randn(4 * 4, 6)
        g = model(global_crops)
        l = model(local_crops)  # corpus: expect here
        loss = (l.view(4, 4, 4).mean(0) - g.view(2, 4, 4).mean(0)).pow(2).mean()
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
