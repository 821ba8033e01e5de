"""SAC policy object built from networks and optimizers passed to its
constructor: the actor loss is formed first from the critics' outputs, then
each critic steps after a retain_graph backward, then the actor loss
backpropagates through the stepped critics (thu-ml/tianshou#37)."""
import torch
import torch.nn.functional as F
from torch import nn

from repro_support import main


class SACPolicy:
    def __init__(self, actor, actor_optim, critic1, critic1_optim, critic2, critic2_optim):
        self.actor, self.actor_optim = actor, actor_optim
        self.critic1, self.critic1_optim = critic1, critic1_optim
        self.critic2, self.critic2_optim = critic2, critic2_optim

    def learn(self, obs, act, target_q):
        a = torch.tanh(self.actor(obs))
        q1, q1a = self.critic1(torch.cat([torch.cat([obs, act], 1), torch.cat([obs, a], 1)])).split(obs.shape[0])
        q2, q2a = self.critic2(torch.cat([torch.cat([obs, act], 1), torch.cat([obs, a], 1)])).split(obs.shape[0])
        actor_loss = (-torch.min(q1a, q2a)).mean()
        critic1_loss = F.mse_loss(q1, target_q)
        self.critic1_optim.zero_grad()
        critic1_loss.backward(retain_graph=True)
        self.critic1_optim.step()
        critic2_loss = F.mse_loss(q2, target_q)
        self.critic2_optim.zero_grad()
        critic2_loss.backward(retain_graph=True)
        self.critic2_optim.step()
        self.actor_optim.zero_grad()
        actor_loss.backward()
        self.actor_optim.step()


def step():
    def critic():
        return nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 1))

    actor, critic1, critic2 = nn.Linear(3, 2), critic(), critic()
    policy = SACPolicy(actor, torch.optim.Adam(actor.parameters()), critic1, torch.optim.Adam(critic1.parameters()),
                       critic2, torch.optim.Adam(critic2.parameters()))
    policy.learn(torch.randn(4, 3), torch.randn(4, 2), torch.randn(4, 1))


if __name__ == "__main__":
    main(step)
