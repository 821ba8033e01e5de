import sys

import torch
from torch import nn

from nets.style import style_net

model = optimizer = optimizer_style = optimizer_norm = None


def init_model():
    global model
    model = style_net()
    model = nn.DataParallel(model)


def init_optimizer():
    global optimizer, optimizer_style, optimizer_norm
    optimizer = torch.optim.SGD(model.module.parameters(), lr=0.1)
    optimizer_style = torch.optim.SGD(model.module.style_params(), lr=0.1)
    optimizer_norm = torch.optim.SGD(model.module.norm_params(), lr=0.1)


def batch():
    return torch.randn(4, 3, 6, 6), torch.randint(0, 3, (4,))


def steps_before_backwards():
    data, label = batch()
    y, y_style = model(data)
    loss_style = nn.functional.cross_entropy(y_style, label)
    optimizer_style.zero_grad()
    loss_style.backward(retain_graph=True)
    optimizer_style.step()
    loss_adv = -torch.log_softmax(y_style, 1).mean()
    optimizer_norm.zero_grad()
    loss_adv.backward(retain_graph=True)
    optimizer_norm.step()
    optimizer.zero_grad()
    nn.functional.cross_entropy(y, label).backward()
    optimizer.step()


def norm_step_before_backward():
    data, label = batch()
    y, y_style = model(data)
    loss_adv = -torch.log_softmax(y_style, 1).mean()
    optimizer_norm.zero_grad()
    loss_adv.backward(retain_graph=True)
    optimizer_norm.step()
    optimizer.zero_grad()
    nn.functional.cross_entropy(y, label).backward()
    optimizer.step()


def backwards_before_steps():
    data, label = batch()
    y, y_style = model(data)
    loss_style = nn.functional.cross_entropy(y_style, label)
    loss_adv = -torch.log_softmax(y_style, 1).mean()
    loss = nn.functional.cross_entropy(y, label)
    optimizer_style.zero_grad()
    loss_style.backward(retain_graph=True)
    optimizer_norm.zero_grad()
    loss_adv.backward(retain_graph=True)
    optimizer.zero_grad()
    loss.backward()
    optimizer_style.step()
    optimizer_norm.step()
    optimizer.step()


if __name__ == "__main__":
    init_model()
    init_optimizer()
    globals()[sys.argv[1]]()
