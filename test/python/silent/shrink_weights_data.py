# The model's weights shrunk through .data (weight decay by hand) between
# the forward and the backward.
# silent: expect silent
# silent: tensor 2.weight
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
x = torch.randn(5, 4, requires_grad=True)
loss = model(x).pow(2).sum()  # silent: saved
for p in model.parameters():
    p.data.mul_(0.9)  # silent: written
loss.backward()  # silent: backward
grads = [x.grad.clone()]
