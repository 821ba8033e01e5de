import torch


class SACPolicy:
    def __init__(self, actor, actor_optim, critic1, critic1_optim):
        self.actor, self.actor_optim = actor, actor_optim
        self.critic1, self.critic1_optim = critic1, critic1_optim

    def learn(self, obs, act):
        a = self.actor(obs)
        current_q1, current_q1a = self.critic1(torch.cat([act, a])).split(2)
        actor_loss = -current_q1a.mean()
        critic1_loss = current_q1.pow(2).mean()
        self.critic1_optim.zero_grad()
        critic1_loss.backward(retain_graph=True)
        self.critic1_optim.step()
        self.actor_optim.zero_grad()
        actor_loss.backward()
        self.actor_optim.step()
