"""SAC agent with an automatically tuned temperature: alpha steps first, the
actor loss takes min(Q1, Q2) of the reparameterised actions, then both
Q-networks step on their own losses before the actor loss backpropagates
through their forwards (TianhongDai/reinforcement-learning-algorithms#8)."""
import torch
from torch import nn

from repro_support import main


def step():
    actor, qf1, qf2 = nn.Linear(3, 4), nn.Linear(5, 1), nn.Linear(5, 1)
    log_alpha = torch.zeros(1, requires_grad=True)
    actor_optim, alpha_optim = torch.optim.Adam(actor.parameters()), torch.optim.Adam([log_alpha])
    qf1_optim, qf2_optim = torch.optim.Adam(qf1.parameters()), torch.optim.Adam(qf2.parameters())
    obses, actions, target_q = torch.randn(4, 3), torch.randn(4, 2), torch.randn(4, 1)
    mean, log_std = actor(obses).chunk(2, dim=1)
    pre_tanh = mean + log_std.exp() * torch.randn_like(mean)
    actions_ = torch.tanh(pre_tanh)
    log_prob = (-0.5 * ((pre_tanh - mean) / log_std.exp()) ** 2 - log_std).sum(1, keepdim=True)
    alpha_loss = -(log_alpha * (log_prob - 2).detach()).mean()
    alpha_optim.zero_grad()
    alpha_loss.backward()
    alpha_optim.step()
    alpha = log_alpha.exp()
    q_actions_ = torch.min(qf1(torch.cat([obses, actions_], 1)), qf2(torch.cat([obses, actions_], 1)))
    actor_loss = (alpha * log_prob - q_actions_).mean()
    qf1_loss = (qf1(torch.cat([obses, actions], 1)) - target_q).pow(2).mean()
    qf2_loss = (qf2(torch.cat([obses, actions], 1)) - target_q).pow(2).mean()
    qf1_optim.zero_grad()
    qf1_loss.backward()
    qf1_optim.step()
    qf2_optim.zero_grad()
    qf2_loss.backward()
    qf2_optim.step()
    actor_optim.zero_grad()
    actor_loss.backward()
    actor_optim.step()


if __name__ == "__main__":
    main(step)
