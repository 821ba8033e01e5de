"""Recurrent linear attention: each call adds to the memory it was given in
place (Zi += K, Si += ...), and returns that memory for the next call; the
previous call's einsums saved the same Si and Zi for their backward
(idiap/fast-transformers#10)."""
import torch
import torch.nn.functional as F
from torch import nn

from repro_support import main


class RecurrentLinearAttention(nn.Module):
    def forward(self, query, key, value, memory=None):
        Q, K = F.elu(query) + 1, F.elu(key) + 1
        N, H, D = Q.shape
        if memory is None:
            Si, Zi = query.new_zeros((N, H, D, value.shape[-1])), query.new_zeros((N, H, D))
        else:
            Si, Zi = memory
        Zi += K
        Si += torch.einsum("nhd,nhm->nhdm", K, value)
        Z = 1. / (torch.einsum("nhd,nhd->nh", Q, Zi) + 1e-6)
        return torch.einsum("nhd,nhdm,nh->nhm", Q, Si, Z), [Si, Zi]


def step():
    attention, project = RecurrentLinearAttention(), nn.Linear(4, 12)
    memory, outputs = None, []
    for x in torch.randn(3, 2, 4).unbind(0):
        q, k, v = project(x).view(2, 3, 4).unbind(1)
        out, memory = attention(q.unsqueeze(1), k.unsqueeze(1), v.unsqueeze(1), memory)
        outputs.append(out)
    torch.stack(outputs).sum().backward()


if __name__ == "__main__":
    main(step)
