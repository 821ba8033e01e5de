# A training step in a worker thread (forward, in-place write, backward) while
# the main thread runs a forward of its own in between: the explainer must see
# the worker's write and place the worker's forward by the worker's own
# autograd numbering (autograd numbers nodes per thread). The worker's error
# is raised again in the main thread, as a trainer that joins its threads does.
import threading

import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return torch.sigmoid(self.lin(x))


torch.manual_seed(0)
net, evaluator = Net(), Net()
forward_done, evaluated = threading.Event(), threading.Event()
errors = []


def train():
    try:
        gate = net(torch.randn(3, 4))  # explain: saved
        forward_done.set()
        evaluated.wait()
        gate.mul_(2.0)  # explain: written
        gate.sum().backward()  # explain: backward
        print(f"trained {gate.sum().item():.6f}")
    except RuntimeError as e:
        errors.append(e)


worker = threading.Thread(target=train)
worker.start()
forward_done.wait()
score = evaluator(torch.randn(3, 4)).sum()
print(f"score {score.item():.6f}")
evaluated.set()
worker.join()
if errors:
    raise errors[0]
