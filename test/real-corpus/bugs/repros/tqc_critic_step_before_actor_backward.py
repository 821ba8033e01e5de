"""TQC trainer: the critic (an ensemble whose forward runs each net in a
generator expression, nets registered with add_module) is stepped on the
quantile loss before the actor loss, built from the critic's output on new
actions, backpropagates (SamsungLabs/tqc_pytorch#8)."""
import torch
from torch import nn

from repro_support import main


class Critic(nn.Module):
    def __init__(self, n_nets):
        super().__init__()
        self.nets = []
        for i in range(n_nets):
            net = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 3))
            self.add_module(f"qf{i}", net)
            self.nets.append(net)

    def forward(self, state, action):
        sa = torch.cat((state, action), dim=1)
        return torch.stack(tuple(net(sa) for net in self.nets), dim=1)


def step():
    actor, critic = nn.Linear(3, 2), Critic(2)
    actor_optimizer, critic_optimizer = torch.optim.Adam(actor.parameters()), torch.optim.Adam(critic.parameters())
    state, action, target = torch.randn(4, 3), torch.randn(4, 2), torch.randn(4, 1, 1)
    critic_loss = (critic(state, action) - target).abs().mean()
    actor_loss = (-critic(state, torch.tanh(actor(state))).mean(2).mean(1, keepdim=True)).mean()
    critic_optimizer.zero_grad()
    critic_loss.backward()
    critic_optimizer.step()
    actor_optimizer.zero_grad()
    actor_loss.backward()
    actor_optimizer.step()


if __name__ == "__main__":
    main(step)
