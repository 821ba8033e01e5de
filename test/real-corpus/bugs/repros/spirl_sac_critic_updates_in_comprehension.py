"""SAC agent: the policy loss takes min over a comprehension of the critics'
outputs; the critics are then updated in a list comprehension through a
base-class _perform_update(loss, opt, network), with optimizers made by a
factory (functools.partial over a filtered parameter list), before the
policy loss's _perform_update backpropagates through them
(clvrai/spirl#15)."""
from functools import partial

import torch
from torch import nn

from repro_support import main


class BaseAgent:
    def _get_optimizer(self, model, lr):
        get_optim = partial(torch.optim.Adam, betas=(0.9, 0.999))
        return get_optim(filter(lambda p: p.requires_grad, model.parameters()), lr=lr)

    def _perform_update(self, loss, opt, network):
        opt.zero_grad()
        loss.backward()
        opt.step()


class SACAgent(BaseAgent):
    def __init__(self):
        self.policy = nn.Linear(3, 2)
        self.critics = nn.ModuleList([nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 1)) for _ in range(2)])
        self.policy_opt = self._get_optimizer(self.policy, 3e-4)
        self.critic_opts = [self._get_optimizer(critic, 3e-4) for critic in self.critics]

    def update(self, obs, act, q_target):
        action = torch.tanh(self.policy(obs))
        q_est = torch.min(*[critic(torch.cat([obs, action], 1)) for critic in self.critics])
        policy_loss = (-q_est).mean()
        critic_losses = [0.5 * (critic(torch.cat([obs, act], 1)) - q_target).pow(2).mean() for critic in self.critics]
        [self._perform_update(critic_loss, critic_opt, critic)
         for critic_loss, critic_opt, critic in zip(critic_losses, self.critic_opts, self.critics)]
        self._perform_update(policy_loss, self.policy_opt, self.policy)


def step():
    SACAgent().update(torch.randn(4, 3), torch.randn(4, 2), torch.randn(4, 1))


if __name__ == "__main__":
    main(step)
