"""SagNet: one forward gives content and style logits; the style head's
optimizer (over a parameter list from a method) steps after a retain_graph
backward, then the adversarial loss on the same style logits backpropagates
through the stepped style head; the adversarial optimizer (over the
backbone's BatchNorm parameters) steps before the content loss's backward.
The optimizers are module globals set by an init function
(hyseob/SagNet#3)."""
import torch
from torch import nn

from repro_support import main

optimizer = optimizer_style = optimizer_adv = None


class SagNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU())
        self.content_fc = nn.Linear(4, 3)
        self.style_net = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
        self.style_fc = nn.Linear(4, 3)

    def forward(self, x):
        feature = self.stem(x).mean((2, 3))
        return self.content_fc(feature), self.style_fc(self.style_net(feature.flip(0)))

    def adv_params(self):
        return [p for m in self.stem.modules() if isinstance(m, nn.BatchNorm2d) for p in m.parameters()]

    def style_params(self):
        return [p for m in [self.style_net, self.style_fc] for p in m.parameters()]


def init_optimizer(model):
    global optimizer, optimizer_style, optimizer_adv
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    optimizer_style = torch.optim.SGD(model.style_params(), lr=0.1)
    optimizer_adv = torch.optim.SGD(model.adv_params(), lr=0.1)


def step():
    model = SagNet()
    init_optimizer(model)
    criterion = nn.CrossEntropyLoss()
    data, label = torch.randn(4, 3, 6, 6), torch.randint(0, 3, (4,))
    y, y_style = model(data)
    loss_style = criterion(y_style, label)
    optimizer_style.zero_grad()
    loss_style.backward(retain_graph=True)
    optimizer_style.step()
    loss_adv = -torch.log_softmax(y_style, 1).mean()
    optimizer_adv.zero_grad()
    loss_adv.backward(retain_graph=True)
    optimizer_adv.step()
    optimizer.zero_grad()
    criterion(y, label).backward()
    optimizer.step()


if __name__ == "__main__":
    main(step)
