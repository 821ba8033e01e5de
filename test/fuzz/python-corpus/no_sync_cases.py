import torch
from torch.nn.parallel import DistributedDataParallel as DDP
from torchvision.models import resnet50

model = DDP(resnet50())
unused = DDP(resnet50(), find_unused_parameters=True)


def one_statement(a, b):
    (model(a) + model(b)).sum().backward()


def maybe_second(a, b, c):
    z1 = model(a)
    if c:
        return z1
    z2 = model(b)
    (z1 + z2).sum().backward()


def second_without_grad(a, b):
    z1 = model(a)
    with torch.no_grad():
        z2 = model(b)
    (z1 + z2).sum().backward()


def reducer_option(a, b):
    z1 = unused(a)
    z2 = unused(b)
    (z1 + z2).sum().backward()


def three_forwards(a, b, c):
    z1 = model(a)
    z2 = model(b)
    z3 = model(c)
    (z1 + z2 + z3).sum().backward()
