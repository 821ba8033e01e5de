"""SAC agent deriving from a base agent whose take_optimisation_step(optimizer,
network, loss) runs backward and step; the critics come from a factory
method of the base class. All losses are computed first, then the critics'
steps run before the actor loss's backward through the critics
(p-christ/Deep-Reinforcement-Learning-Algorithms-with-PyTorch#56)."""
import torch
import torch.nn.functional as F
from torch import nn

from repro_support import main


class BaseAgent:
    def create_NN(self, input_dim, output_dim):
        return nn.Sequential(nn.Linear(input_dim, 8), nn.ReLU(), nn.Linear(8, output_dim))

    def take_optimisation_step(self, optimizer, network, loss, clipping_norm=None, retain_graph=False):
        optimizer.zero_grad()
        loss.backward(retain_graph=retain_graph)
        if clipping_norm is not None:
            torch.nn.utils.clip_grad_norm_(network.parameters(), clipping_norm)
        optimizer.step()


class SAC(BaseAgent):
    def __init__(self):
        self.actor_local = self.create_NN(3, 2)
        self.critic_local, self.critic_local_2 = self.create_NN(5, 1), self.create_NN(5, 1)
        self.actor_optimizer = torch.optim.Adam(self.actor_local.parameters())
        self.critic_optimizer = torch.optim.Adam(self.critic_local.parameters())
        self.critic_optimizer_2 = torch.optim.Adam(self.critic_local_2.parameters())

    def learn(self, states, actions, next_q):
        qf1_loss = F.mse_loss(self.critic_local(torch.cat((states, actions), 1)), next_q)
        qf2_loss = F.mse_loss(self.critic_local_2(torch.cat((states, actions), 1)), next_q)
        action = torch.tanh(self.actor_local(states))
        policy_loss = (-torch.min(self.critic_local(torch.cat((states, action), 1)),
                                  self.critic_local_2(torch.cat((states, action), 1)))).mean()
        self.take_optimisation_step(self.critic_optimizer, self.critic_local, qf1_loss, 5.0)
        self.take_optimisation_step(self.critic_optimizer_2, self.critic_local_2, qf2_loss, 5.0)
        self.take_optimisation_step(self.actor_optimizer, self.actor_local, policy_loss, 5.0)


def step():
    SAC().learn(torch.randn(4, 3), torch.randn(4, 2), torch.randn(4, 1))


if __name__ == "__main__":
    main(step)
