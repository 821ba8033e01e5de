"""Confirms known_true.txt's timm/timm/models/tnt.py:65 on CPU.

The forward of timm 1.0.31's TNT Attention (timm/models/tnt.py, lines 32-70,
Apache-2.0, Ross Wightman), cut to what the finding is about: softmax saves
its output; nn.Dropout(inplace=True) then writes it. Prints, for attn_drop
0.0 and 0.1 in train and eval mode, whether a backward trains or fails with
autograd's in-place error; exits 1 unless only (0.1, train) fails.
"""
import sys

import torch
import torch.nn as nn


class Attention(nn.Module):
    def __init__(self, dim, hidden_dim, num_heads=8, attn_drop=0.):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = hidden_dim // num_heads
        self.scale = self.head_dim ** -0.5
        self.qk = nn.Linear(dim, hidden_dim * 2)
        self.v = nn.Linear(dim, dim)
        self.attn_drop = nn.Dropout(attn_drop, inplace=True)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, N, C = x.shape
        qk = self.qk(x).reshape(B, N, 2, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k = qk.unbind(0)
        v = self.v(x).reshape(B, N, self.num_heads, -1).permute(0, 2, 1, 3)
        attn = (q @ k.transpose(-2, -1)) * self.scale
        attn = attn.softmax(dim=-1)
        attn = self.attn_drop(attn)  # tnt.py:65, the finding's line
        x = (attn @ v).transpose(1, 2).reshape(B, N, -1)
        return self.proj(x)


def main():
    torch.manual_seed(0)
    failing = set()
    for p in (0.0, 0.1):
        for mode in ("train", "eval"):
            model = Attention(32, 32, num_heads=4, attn_drop=p)
            getattr(model, mode)()
            x = torch.randn(2, 5, 32, requires_grad=True)
            try:
                model(x).sum().backward()
                print("attn_drop=%s %s: trains" % (p, mode))
            except RuntimeError as e:
                if "modified by an inplace operation" not in str(e):
                    raise
                failing.add((p, mode))
                print("attn_drop=%s %s: fails: %s" % (p, mode, str(e).splitlines()[0]))
    return 0 if failing == {(0.1, "train")} else 1


if __name__ == "__main__":
    sys.exit(main())
