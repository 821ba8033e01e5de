# StyleGAN2's blur: a custom autograd.Function saves the module's blur kernel
# buffer; two forwards through one DDP before the backward, and the second
# forward's buffer broadcast overwrites the kernel the first saved (torch <=
# 2.12.0; 2.12.1+ keeps buffers' version counters through the broadcast).
# explain: ranks 2
# explain: tensor kernel
import gc

import torch
import torch.distributed as dist
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
        self.register_buffer("kernel", torch.full((4,), 0.25))

    def forward(self, x):
        return Blur.apply(self.lin(x), self.kernel)


dist.init_process_group("gloo")
torch.manual_seed(0)
model = nn.parallel.DistributedDataParallel(Net())
opt = torch.optim.SGD(model.parameters(), lr=0.1)
torch.manual_seed(1 + dist.get_rank())
for step in range(2):
    real, fake = torch.randn(6, 4), torch.randn(6, 4)
    out_real = model(real)  # explain: saved
    out_fake = model(fake)  # explain: written
    loss = (out_real - out_fake).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"rank {dist.get_rank()} loss {loss.item():.6f}")
del model, opt
gc.collect()
dist.barrier()
dist.destroy_process_group()
