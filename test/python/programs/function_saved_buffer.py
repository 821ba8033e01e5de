# A custom autograd.Function saves a module's buffer with ctx.save_for_backward;
# an update of the buffer under no_grad before the backward makes it stale
# (the explainer must name it without unpacking the Function's saved tensors).
# explain: tensor kernel
import torch
from torch import nn


class Blur(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, kernel):
        ctx.save_for_backward(kernel)
        return x * kernel

    @staticmethod
    def backward(ctx, grad):
        (kernel,) = ctx.saved_tensors
        return grad * kernel, None


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.register_buffer("kernel", torch.ones(4))

    def forward(self, x):
        return Blur.apply(self.lin(x), self.kernel)


torch.manual_seed(0)
net = Net()
out = net(torch.randn(3, 4))  # explain: saved
with torch.no_grad():
    net.kernel.mul_(0.5)  # explain: written
out.sum().backward()
print(f"out {out.sum().item():.6f}")
