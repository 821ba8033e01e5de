"""SAC agent: both critic losses and the policy loss are computed first; a
helper update_params(optim, network, loss) runs backward and step; the twin
critic's per-head optimizers (over critic.Q1's, critic.Q2's parameters) step
before the policy loss's backward through the critic
(toshikwa/soft-actor-critic.pytorch#1)."""
import torch
from torch import nn

from repro_support import main


def update_params(optim, network, loss, grad_clip=None, retain_graph=False):
    optim.zero_grad()
    loss.backward(retain_graph=retain_graph)
    if grad_clip is not None:
        for p in network.modules():
            torch.nn.utils.clip_grad_norm_(p.parameters(), grad_clip)
    optim.step()


class TwinnedQNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.Q1 = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 1))
        self.Q2 = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 1))

    def forward(self, states, actions):
        x = torch.cat([states, actions], 1)
        return self.Q1(x), self.Q2(x)


def step():
    policy, critic = nn.Linear(3, 2), TwinnedQNetwork()
    q1_optim, q2_optim = torch.optim.Adam(critic.Q1.parameters()), torch.optim.Adam(critic.Q2.parameters())
    policy_optim = torch.optim.Adam(policy.parameters())
    states, actions, target_q = torch.randn(4, 3), torch.randn(4, 2), torch.randn(4, 1)
    curr_q1, curr_q2 = critic(states, actions)
    q1_loss, q2_loss = (curr_q1 - target_q).pow(2).mean(), (curr_q2 - target_q).pow(2).mean()
    q1, q2 = critic(states, torch.tanh(policy(states)))
    policy_loss = (-torch.min(q1, q2)).mean()
    update_params(q1_optim, critic.Q1, q1_loss)
    update_params(q2_optim, critic.Q2, q2_loss)
    update_params(policy_optim, policy, policy_loss)


if __name__ == "__main__":
    main(step)
