# A buffer overwritten under torch.autograd._unsafe_preserve_version_counter
# (as DDP 2.12.1+ broadcasts buffers) after a forward saved it.
# silent: expect silent
# silent: tensor scale
import torch
from torch import nn


class Scaled(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.register_buffer("scale", torch.full((3,), 0.5))

    def forward(self, x):
        return self.fc(x) * self.scale


torch.manual_seed(0)
model = Scaled()
loss = model(torch.randn(5, 4)).pow(2).sum()  # silent: saved
with torch.no_grad(), torch.autograd._unsafe_preserve_version_counter(model.scale):
    model.scale.copy_(torch.full((3,), 2.0))  # silent: written
loss.backward()  # silent: backward
grads = [p.grad.clone() for p in model.parameters()]
