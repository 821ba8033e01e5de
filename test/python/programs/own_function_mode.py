# The script runs its model under its own TorchFunctionMode (as tracing and
# logging tools do): the explainer must report the script's lines, not the
# lines inside the mode's __torch_function__.
import torch
from torch import nn
from torch.overrides import TorchFunctionMode


class CountCalls(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.calls += 1
        return self.forward_call(func, args, kwargs or {})

    def forward_call(self, func, args, kwargs):
        return func(*args, **kwargs)


torch.manual_seed(0)
lin = nn.Linear(4, 4)
x = torch.randn(3, 4)
with CountCalls() as mode:
    gate = torch.sigmoid(lin(x))  # explain: saved
    gate.mul_(2.0)  # explain: written
    loss = gate.sum()
    loss.backward()  # explain: backward
print(f"loss {loss.item():.6f} calls {mode.calls}")
