# FixMatch as kekmodel/FixMatch-pytorch (train.py) writes it: labeled, weak
# and strong batches concatenated (interleaved) into one forward, the pseudo
# labels from the detached weak logits; one DDP forward per backward.
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
        inputs = torch.cat([x, u + 0.05 * torch.randn_like(u), u + 0.5 * torch.randn_like(u)])
        logits = model(inputs)
        logits_x = logits[:4]
        logits_u_w, logits_u_s = logits[4:].chunk(2)
        conf, pseudo = F.softmax(logits_u_w.detach(), 1).max(1)
        loss = F.cross_entropy(logits_x, y) + (F.cross_entropy(logits_u_s, pseudo, reduction="none")
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
