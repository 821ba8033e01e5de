match cmd:
    case [x, *rest] if x:
        out = model(x)
    case {"a": 1, **kw}:
        pass
    case _:
        pass
import torch
from torch.nn.parallel import DistributedDataParallel as DDP
from torchvision.models import resnet50

model = DDP(resnet50())
for input0, input1 in loader:
    out1 = model(input0)
    out2 = model(input1)
    criterion(out1, out2).backward()
