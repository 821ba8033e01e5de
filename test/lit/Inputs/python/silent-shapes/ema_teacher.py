# Measured on torch 2.11.0: trains (the teacher's forward ran without grad
# and saved nothing; gradients equal to the clone-at-pack reference).
import torch
from torch import nn
torch.manual_seed(0)
student = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
teacher = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
x = torch.randn(5, 4)
with torch.no_grad():
    target = teacher(x)
loss = (student(x) - target).pow(2).sum()
for t, s in zip(teacher.parameters(), student.parameters()):
    t.data.mul_(0.99).add_(s.data, alpha=0.01)
loss.backward()
grads = [p.grad.clone() for p in student.parameters()]
