"""Which torch.nn layers' forwards save a parameter for backward, with and
without an input that requires grad: an Adam step (which bumps the
parameters' version counters) between the forward and its backward makes
that backward fail iff the forward saved one. Prints one line per case;
docs/ground-truth.md, "Which parameters a module's forward saves", holds
the output. The checker's table is ModuleCalls.cpp's torchLayerSaving.

  python module_saves.py
"""
import torch

CASES = [
    ("Linear", lambda: torch.nn.Linear(4, 3), lambda: [torch.randn(2, 4)]),
    ("Linear, 3-d input", lambda: torch.nn.Linear(4, 3), lambda: [torch.randn(2, 5, 4)]),
    ("Bilinear", lambda: torch.nn.Bilinear(4, 4, 3),
     lambda: [torch.randn(2, 4), torch.randn(2, 4)]),
    ("Conv1d", lambda: torch.nn.Conv1d(2, 3, 3), lambda: [torch.randn(1, 2, 5)]),
    ("Conv2d", lambda: torch.nn.Conv2d(2, 3, 3), lambda: [torch.randn(1, 2, 5, 5)]),
    ("ConvTranspose2d", lambda: torch.nn.ConvTranspose2d(2, 3, 3),
     lambda: [torch.randn(1, 2, 5, 5)]),
    ("Embedding", lambda: torch.nn.Embedding(10, 3), lambda: [torch.tensor([1, 2])]),
    ("LayerNorm", lambda: torch.nn.LayerNorm(4), lambda: [torch.randn(2, 4)]),
    ("BatchNorm1d", lambda: torch.nn.BatchNorm1d(4), lambda: [torch.randn(3, 4)]),
    ("GroupNorm", lambda: torch.nn.GroupNorm(2, 4), lambda: [torch.randn(3, 4)]),
    ("PReLU", lambda: torch.nn.PReLU(), lambda: [torch.randn(3, 4)]),
    ("Sequential(Linear, Linear)",
     lambda: torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 3)),
     lambda: [torch.randn(2, 4)]),
]


def outcome(make_module, make_inputs, requires_grad):
    torch.manual_seed(0)
    module = make_module()
    opt = torch.optim.Adam(module.parameters(), lr=0.1)
    inputs = [t.requires_grad_(requires_grad) if t.is_floating_point() else t
              for t in make_inputs()]
    out = module(*inputs)
    for p in module.parameters():
        p.grad = torch.ones_like(p)
    opt.step()
    try:
        out.sum().backward()
        return "ok"
    except RuntimeError as e:
        if "modified by an inplace operation" in str(e):
            return "error"
        raise


print(f"torch {torch.__version__}")
for name, make_module, make_inputs in CASES:
    cells = [outcome(make_module, make_inputs, r) for r in (False, True)]
    print(f"| {name} | {cells[0]} | {cells[1]} |")
