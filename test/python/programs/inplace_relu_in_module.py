# nn.ReLU(inplace=True) inside the model's forward overwrites the output
# that sigmoid saved: the write is inside the forward, the saving forward is
# the model call.
import torch
from torch import nn


class Gate(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.act = nn.ReLU(inplace=True)

    def forward(self, x):
        g = torch.sigmoid(self.fc(x))
        return self.act(g - 0.5 + g)  # control: writes a fresh value


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.act = nn.ReLU(inplace=True)

    def forward(self, x):
        h = torch.sigmoid(self.fc(x))
        self.act(h)  # explain: written
        return h * 2.0


torch.manual_seed(0)
net = nn.Sequential(Gate(), Net())
out = net(torch.randn(3, 4))  # explain: saved
loss = out.sum()
loss.backward()
print(f"loss {loss.item():.6f}")
