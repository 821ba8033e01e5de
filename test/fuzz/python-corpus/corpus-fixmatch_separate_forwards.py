# FixMatch (Sohn et al. 2020) with one forward per input: labeled batch,
# then the weakly augmented unlabeled batch under no_grad for the pseudo
# labels, then the strongly augmented one, one backward of the summed loss.
# (kekmodel/FixMatch-pytorch concatenates them instead; see
# fixmatch_interleaved.py.)
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
        x, y = torch.randn(4, 8), torch.randint(0, 5, (4,))
        u = torch.randn(8, 8)
        logits_x = model(x)
        with torch.no_grad():
            probs = F.softmax(model(u + 0.05 * torch.randn_like(u)), 1)  # corpus: expect here
        conf, pseudo = probs.max(1)
        logits_s = model(u + 0.5 * torch.randn_like(u))
        loss = F.cross_entropy(logits_x, y) + (F.cross_entropy(logits_s, pseudo, reduction="none")
                                               * (conf > 0.0).float()).mean()
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
