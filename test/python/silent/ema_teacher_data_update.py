# Control: a mean teacher updated by EMA through .data between the student's
# forward and its backward. The teacher's forward ran under no_grad, so its
# graph saved nothing, and the student's backward reads none of the teacher's
# weights: the write changes no gradient.
# silent: expect trains
import torch
from torch import nn

torch.manual_seed(0)
student = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
teacher = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
teacher.load_state_dict(student.state_dict())
x = torch.randn(5, 4)
out = student(x)
with torch.no_grad():
    target = teacher(x)
for t, s in zip(teacher.parameters(), student.parameters()):
    t.data.mul_(0.99).add_(s.data, alpha=0.01)
loss = nn.functional.mse_loss(out, target)
loss.backward()
grads = [p.grad.clone() for p in student.parameters()]
