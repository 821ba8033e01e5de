# Control: the .data update comes after the backward.
# silent: expect trains
import torch
from torch import nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
for step in range(2):
    loss = model(torch.randn(5, 4)).pow(2).sum()
    model.zero_grad()
    loss.backward()
    for p in model.parameters():
        p.data.add_(p.grad, alpha=-0.1)
grads = [p.grad.clone() for p in model.parameters()]
