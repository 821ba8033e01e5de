# A gate scaled through .data after sigmoid saved its output: sigmoid's
# backward reads the scaled output.
# silent: expect silent
# silent: activation Sigmoid
import torch
from torch import nn

torch.manual_seed(0)
fc = nn.Linear(4, 3)
x = torch.randn(5, 4)
gate = torch.sigmoid(fc(x))  # silent: saved
gate.data.mul_(2)  # silent: written
loss = (gate * torch.randn(5, 3)).sum()
loss.backward()  # silent: backward
grads = [p.grad.clone() for p in fc.parameters()]
