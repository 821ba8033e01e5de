"""Recurrent state (issue 28, fast-transformers#10): a module's forward
writes in place the state it was given and returns it, and its caller feeds
the returned state into the next call. `python cells.py` runs each cell for
three steps and one backward and prints whether it trains."""
import sys

import torch
from torch import nn


class UnpackedState(nn.Module):
    def forward(self, key, memory=None):
        if memory is None:
            state, norm = key.new_zeros(key.shape), key.new_zeros(key.shape)
        else:
            state, norm = memory
        state += key
        norm += key
        return torch.einsum("nd,nd->nd", key, state) / norm, [state, norm]


class ParameterState(nn.Module):
    def forward(self, x, h):
        h.add_(x)
        return h * x, h


class OutOfPlaceState(nn.Module):
    def forward(self, x, h):
        h = h + x
        return h * x, h


class UnsavedState(nn.Module):
    def forward(self, x, h):
        h += x
        return torch.relu(x), h


def run(cell, memory):
    layer = nn.Linear(4, 4)
    out = []
    for x in torch.randn(3, 2, 4).unbind(0):
        y, memory = cell(layer(x), memory)
        out.append(y)
    torch.stack(out).sum().backward()


if __name__ == "__main__":
    for cell, memory in [(UnpackedState(), None), (ParameterState(), torch.ones(2, 4)),
                         (OutOfPlaceState(), torch.ones(2, 4)), (UnsavedState(), torch.ones(2, 4))]:
        try:
            run(cell, memory)
            print(type(cell).__name__, "trains")
        except RuntimeError as e:
            print(type(cell).__name__, "fails" if "modified by an inplace operation" in str(e) else e)
    sys.exit(0)
