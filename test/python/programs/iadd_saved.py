# x += y on a value that exp saved for backward.
import torch

torch.manual_seed(0)
w = torch.randn(4, requires_grad=True)
bias = torch.randn(4)
e = torch.exp(w)  # explain: saved
e += bias  # explain: written
loss = e.sum()
loss.backward()
print(f"loss {loss.item():.6f}")
