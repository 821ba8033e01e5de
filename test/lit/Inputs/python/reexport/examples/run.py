import torch
from pkg.policy import SACPolicy

actor = torch.nn.Linear(4, 4)
critic1 = torch.nn.Linear(4, 1)
actor_optim = torch.optim.Adam(actor.parameters())
critic1_optim = torch.optim.Adam(critic1.parameters())
policy = SACPolicy(actor, actor_optim, critic1, critic1_optim)
policy.learn(torch.randn(2, 4), torch.randn(2, 4))
