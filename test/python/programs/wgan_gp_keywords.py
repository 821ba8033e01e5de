# WGAN-GP's gradient penalty, with torch.autograd.grad spelled by keyword as
# the paper's reference code does: trains (the explainer must not change that).
import torch
from torch import autograd, nn

torch.manual_seed(0)
D = nn.Sequential(nn.Linear(4, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1))
opt_d = torch.optim.Adam(D.parameters(), lr=1e-3)
real, fake = torch.randn(5, 4), torch.randn(5, 4)
alpha = torch.rand(5, 1)
interpolates = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
d_interpolates = D(interpolates)
gradients = autograd.grad(outputs=d_interpolates, inputs=interpolates,
                          grad_outputs=torch.ones_like(d_interpolates),
                          create_graph=True, retain_graph=True, only_inputs=True)[0]
penalty = ((gradients.norm(2, dim=1) - 1) ** 2).mean()
loss_d = D(fake).mean() - D(real).mean() + 10 * penalty
opt_d.zero_grad()
torch.autograd.backward(tensors=loss_d)
opt_d.step()
print(f"loss_d {loss_d.item():.6f}")
