import torch
from torch import nn

from utils import update_params


class Base:
    def take_step(self, optimizer, loss):
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


class Agent(Base):
    def __init__(self):
        self.critic = nn.Linear(4, 1)
        self.policy = nn.Linear(4, 4)
        self.critic_optim = torch.optim.Adam(self.critic.parameters())
        self.policy_optim = torch.optim.Adam(self.policy.parameters())

    def critic_loss(self, s):
        return self.critic(s).pow(2).mean()

    def policy_loss(self, s):
        return -self.critic(self.policy(s)).mean()

    def learn(self, s):
        q_loss = self.critic_loss(s)
        pi_loss = self.policy_loss(s)
        update_params(self.critic_optim, q_loss)
        update_params(self.policy_optim, pi_loss)

    def learn_in_base(self, s):
        q_loss = self.critic_loss(s)
        pi_loss = self.policy_loss(s)
        self.take_step(self.critic_optim, q_loss)
        self.take_step(self.policy_optim, pi_loss)

    def learn_in_order(self, s):
        update_params(self.critic_optim, self.critic_loss(s))
        update_params(self.policy_optim, self.policy_loss(s))


if __name__ == "__main__":
    import sys

    agent = Agent()
    getattr(agent, sys.argv[1])(torch.randn(8, 4))
