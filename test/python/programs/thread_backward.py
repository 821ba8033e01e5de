# The forward and the in-place write run in the main thread, the backward in
# a worker thread (whose autograd numbering starts again at 0): the explainer
# must still place the forward and the write. The worker's error is raised
# again in the main thread.
import threading

import torch
from torch import nn

torch.manual_seed(0)
lin = nn.Linear(4, 4)
gate = torch.sigmoid(lin(torch.randn(3, 4)))  # explain: saved
gate.mul_(2.0)  # explain: written
loss = gate.sum()
errors = []


def step():
    try:
        loss.backward()  # explain: backward
        print(f"loss {loss.item():.6f}")
    except RuntimeError as e:
        errors.append(e)


worker = threading.Thread(target=step)
worker.start()
worker.join()
if errors:
    raise errors[0]
