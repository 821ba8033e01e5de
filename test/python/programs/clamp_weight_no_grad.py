# Weight clipping (WGAN style) under no_grad between the forward and its
# backward: the second Linear layer saved its weight (its input needs a
# gradient).
# explain: tensor 2.weight
import torch
from torch import nn

torch.manual_seed(0)
critic = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
x = torch.randn(5, 4)
score = critic(x).mean()  # explain: saved
with torch.no_grad():
    for p in critic.parameters():
        p.clamp_(-0.01, 0.01)  # explain: written
score.backward()
print(f"score {score.item():.6f}")
