import torch
import torch.nn.functional as F
from torch import nn


class Gated(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 16)
        self.gate_fc = nn.Linear(8, 16)
        self.head = nn.Linear(16, 3)

    def forward(self, x):
        h = self.fc(x)
        gate = torch.sigmoid(self.gate_fc(x))
        gate.mul_(2)
        g = h * gate
        h += self.fc(x) - 1
        return self.head(h + g)


def train_step(model, x, y, opt):
    p = F.relu(model(x))
    p[:, 0] = 0
    loss = F.cross_entropy(p, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
