"""Dreamer's actor-critic: lambda targets are computed from the value model's
outputs on imagined states; the value model steps on its loss (against the
detached targets) after a retain_graph backward, then the action loss, the
mean of those same targets, backpropagates through the stepped value model
(cross32768/Dreamer_PyTorch#2)."""
import torch
from torch import nn
from torch.nn.functional import mse_loss
from torch.nn.utils import clip_grad_norm_

from repro_support import main


def lambda_target(rewards, values, gamma, lambda_):
    targets = torch.zeros_like(values)
    targets[-1] = values[-1]
    for t in reversed(range(values.shape[0] - 1)):
        targets[t] = rewards[t] + gamma * ((1 - lambda_) * values[t + 1] + lambda_ * targets[t + 1])
    return targets


def step():
    action_model, value_model = nn.Linear(4, 4), nn.Sequential(nn.Linear(4, 8), nn.ELU(), nn.Linear(8, 1))
    value_optimizer = torch.optim.Adam(value_model.parameters())
    action_optimizer = torch.optim.Adam(action_model.parameters())
    states = [torch.randn(3, 4)]
    for _ in range(3):
        states.append(torch.tanh(action_model(states[-1])))
    imagined = torch.stack(states)
    values = value_model(imagined.view(-1, 4)).view(4, -1)
    targets = lambda_target(imagined.sum(-1), values, 0.99, 0.95)
    value_loss = 0.5 * mse_loss(values, targets.detach())
    value_optimizer.zero_grad()
    value_loss.backward(retain_graph=True)
    clip_grad_norm_(value_model.parameters(), 100.0)
    value_optimizer.step()
    action_loss = -targets.mean()
    action_optimizer.zero_grad()
    action_loss.backward()
    action_optimizer.step()


if __name__ == "__main__":
    main(step)
