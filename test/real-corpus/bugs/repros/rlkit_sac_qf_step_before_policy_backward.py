"""SAC trainer: the policy loss is built from Q-network outputs on the
policy's actions; the Q-networks' optimizers (made in __init__ by an
optimizer class passed in) step on their own losses before the policy loss
backpropagates through those Q forwards (rail-berkeley/rlkit#109)."""
import torch
from torch import nn

from repro_support import main


class SACTrainer:
    def __init__(self, policy, qf1, qf2, optimizer_class=torch.optim.Adam):
        self.policy, self.qf1, self.qf2 = policy, qf1, qf2
        self.policy_optimizer = optimizer_class(self.policy.parameters())
        self.qf1_optimizer = optimizer_class(self.qf1.parameters())
        self.qf2_optimizer = optimizer_class(self.qf2.parameters())

    def train_from_torch(self, obs, actions, q_target):
        new_actions = torch.tanh(self.policy(obs))
        q_new = torch.min(self.qf1(torch.cat([obs, new_actions], 1)), self.qf2(torch.cat([obs, new_actions], 1)))
        policy_loss = (-q_new).mean()
        qf1_loss = (self.qf1(torch.cat([obs, actions], 1)) - q_target).pow(2).mean()
        qf2_loss = (self.qf2(torch.cat([obs, actions], 1)) - q_target).pow(2).mean()
        self.qf1_optimizer.zero_grad()
        qf1_loss.backward()
        self.qf1_optimizer.step()
        self.qf2_optimizer.zero_grad()
        qf2_loss.backward()
        self.qf2_optimizer.step()
        self.policy_optimizer.zero_grad()
        policy_loss.backward()
        self.policy_optimizer.step()


def step():
    def mlp():
        return nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 1))

    SACTrainer(nn.Linear(3, 2), mlp(), mlp()).train_from_torch(torch.randn(4, 3), torch.randn(4, 2), torch.randn(4, 1))


if __name__ == "__main__":
    main(step)
