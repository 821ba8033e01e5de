# Control: a .data write between forward and backward to a parameter no
# node saved (a bias: addmm's backward does not read it).
# silent: expect trains
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
loss = model(torch.randn(5, 4)).pow(2).sum()
model[2].bias.data.mul_(0.5)
loss.backward()
grads = [p.grad.clone() for p in model.parameters()]
