"""Two loss helpers each run a forward of the DDP-wrapped student (BatchNorm
inside), the model passed as a parameter; one backward of their sum. DDP's
buffer broadcast before the second forward overwrites the running statistics
the first forward saved (naver-ai/dual-teacher#5)."""
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from repro_support import main_ddp


def cutmix_loss(model, teacher, images, labels, unlabeled):
    with torch.no_grad():
        pseudo = teacher(unlabeled).argmax(1)
    outputs = model(torch.cat([images, unlabeled]))
    return F.cross_entropy(outputs, torch.cat([labels, pseudo]))


def consistency_loss(model, teacher, unlabeled, strong):
    with torch.no_grad():
        pseudo = teacher(unlabeled).argmax(1)
    return F.cross_entropy(model(strong), pseudo)


def step(rank):
    def segmenter():
        return nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.Conv2d(4, 3, 1))

    model = DistributedDataParallel(segmenter(), find_unused_parameters=True)
    teacher = segmenter()
    optimizer = torch.optim.AdamW(model.parameters())
    images, unlabeled = torch.randn(2, 3, 6, 6), torch.randn(2, 3, 6, 6)
    labels = torch.randint(0, 3, (2, 6, 6))
    loss = cutmix_loss(model, teacher, images, labels, unlabeled)
    loss_dc = consistency_loss(model, teacher, unlabeled, unlabeled + 0.1 * torch.randn_like(unlabeled))
    optimizer.zero_grad()
    (loss + 0.2 * loss_dc).backward()
    optimizer.step()


if __name__ == "__main__":
    main_ddp(step)
