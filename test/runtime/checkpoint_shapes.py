"""Which shapes activation checkpointing turns from a loud in-place error
into a silent one (issue 30, deliverable 3).

    python test/runtime/checkpoint_shapes.py PYTHON...

The GAN shape of test/python/silent: D saves its parameters in its forward
on the fake batch, D's loss backpropagates with retain_graph=True, D's
parameters are written, then G's loss backpropagates through D(fake). The
write is one of: a default Adam step (bumps the version counters), a
fused Adam step, an in-place write under no_grad (bumps), a write through
.data, none. D(fake) runs plainly, under checkpoint(use_reentrant=True) or
under checkpoint(use_reentrant=False). Each run is compared with the
reference: D(fake) called plainly, every saved tensor cloned at pack time.
"raises" is autograd's in-place error; otherwise the largest difference of
G's gradients from the reference's ("silent" above 0, "trains" at 0).
Each PYTHON runs this file with --one and prints its column.
"""
import contextlib
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "python"))

WRITES = ("adam", "fused adam", "no_grad mul_", ".data mul_", "none")
FORWARDS = ("plain", "reentrant", "non-reentrant")


def run(write, forward, reference=False):
    import torch
    from torch import nn
    from torch.utils.checkpoint import checkpoint

    torch.manual_seed(0)
    G = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 4))
    D = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    opt_d = torch.optim.Adam(D.parameters(), lr=0.1, fused=write == "fused adam")
    real, fake = torch.randn(5, 4), G(torch.randn(5, 4))
    hooks = (torch.autograd.graph.saved_tensors_hooks(lambda t: t.clone(), lambda t: t)
             if reference else contextlib.nullcontext())
    with hooks:
        d_fake = (D(fake) if forward == "plain"
                  else checkpoint(D, fake, use_reentrant=forward == "reentrant"))
        loss_d = (nn.functional.softplus(d_fake).mean()
                  + nn.functional.softplus(-D(real)).mean())
    loss_d.backward(retain_graph=True)
    if write in ("adam", "fused adam"):
        opt_d.step()
    elif write == "no_grad mul_":
        with torch.no_grad():
            for p in D.parameters():
                p.mul_(0.5)
    elif write == ".data mul_":
        for p in D.parameters():
            p.data.mul_(0.5)
    G.zero_grad()
    try:
        nn.functional.softplus(-d_fake).mean().backward()
    except RuntimeError as e:
        from ddpguard.explain._analysis import is_version_error
        if not is_version_error(e):
            raise
        return None
    return [p.grad.clone() for p in G.parameters()]


def column():
    import torch
    print(torch.__version__)
    for write in WRITES:
        reference = run(write, "plain", reference=True)
        for forward in FORWARDS:
            grads = run(write, forward)
            if grads is None:
                print("raises")
                continue
            diff = max((a - b).abs().max().item() for a, b in zip(grads, reference))
            print(f"silent ({diff:.2g})" if diff > 0 else "trains (0)")


def main():
    if sys.argv[1:2] == ["--one"]:
        column()
        return
    columns = [subprocess.run([python, __file__, "--one"], check=True, text=True,
                              capture_output=True).stdout.split("\n")
               for python in sys.argv[1:]]
    print("| write before G's backward | D(fake) | "
          + " | ".join(f"torch {c[0]}" for c in columns) + " |")
    print("|---|---|" + "---|" * len(columns))
    row = 1
    for write in WRITES:
        for forward in FORWARDS:
            print(f"| {write} | {forward} | " + " | ".join(c[row] for c in columns) + " |")
            row += 1


if __name__ == "__main__":
    main()
