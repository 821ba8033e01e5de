"""Which optimizer steps bump the version counters of the parameters they
update, in Python (issue 18, item 1). Run by scripts/optimizer-versions.sh
with each venv's python; the C++ twin is optimizer_versions.cpp.

    python test/optimizer-versions/optimizer_versions.py

Every case builds a fresh nn.Linear(4, 3) (manual_seed(0)) and an optimizer
over its parameters, then, three times: a backward of lin(d).pow(2).sum()
(d without grad) fills the gradients; h = lin(x) with x requiring grad (the
graph saves the weight: linear/addmm saves mat2 when the input needs a
gradient) and c = lin(d) (the control: the graph saves only d); the write
under test (opt.step(), or the line the case names); then h.sum().backward()
and c.sum().backward(). It prints one line per case and variant,

    case<TAB>NAME<TAB>VARIANT<TAB>CELL

CELL is "+N ok" or "+N error": N the weight's _version delta per step (the
three steps joined with "/" when they differ; the bias's added when it
differs from the weight's), error when the backward through h failed with
autograd's in-place error. It adds "silent" when the backward through h ran
although the write changed the weight (x.grad was computed with the new
weight, not the one the forward used), "control error" when the backward
through c failed too (it should never), the grad's fate for zero_grad, and
"unsupported: MESSAGE" when torch refuses the variant. VARIANT is loop
(foreach=False, fused=False: on CPU the default), foreach (foreach=True) or
fused (fused=True); a case without that argument prints "n/a".
"""

import inspect
import sys
import warnings

import torch
from torch import nn

warnings.filterwarnings("ignore")
INPLACE = "modified by an inplace operation"
STEPS = 3


def backward_fails(t):
    try:
        t.sum().backward()
        return False
    except RuntimeError as e:
        if INPLACE in str(e):
            return True
        raise


def joined(deltas):
    return str(deltas[0]) if len(set(deltas)) == 1 else "/".join(map(str, deltas))


def measure(make, write=None, fill=True):
    """write(opt, lin) performs the write under test; default opt.step()."""
    torch.manual_seed(0)
    lin = nn.Linear(4, 3)
    opt = make(lin.parameters())
    dw, db, fails, control, grads, silent = [], [], [], [], [], []
    for _ in range(STEPS):
        d = torch.randn(2, 4)
        if fill:
            opt.zero_grad(set_to_none=True)
            lin(d).pow(2).sum().backward()
        else:
            opt.zero_grad(set_to_none=True)
        x = torch.randn(2, 4, requires_grad=True)
        h, c = lin(x), lin(d)
        w0, b0 = lin.weight._version, lin.bias._version
        g0 = lin.weight.grad._version if lin.weight.grad is not None else None
        before = lin.weight.detach().clone()
        if write is None:
            if isinstance(opt, torch.optim.LBFGS):
                def closure():
                    opt.zero_grad()
                    loss = lin(d).pow(2).sum()
                    loss.backward()
                    return loss
                opt.step(closure)
            else:
                opt.step()
        else:
            write(opt, lin)
        dw.append(lin.weight._version - w0)
        db.append(lin.bias._version - b0)
        g = lin.weight.grad
        grads.append("None" if g is None else
                     f"+{g._version - g0}" if g0 is not None else "new")
        fails.append(backward_fails(h))
        # h's backward ran although the step changed the weight it saved:
        # x.grad = ones @ W was computed with the new weight.
        silent.append(not fails[-1] and not torch.equal(before, lin.weight) and
                      torch.equal(x.grad, torch.ones(2, 3) @ lin.weight.detach()))
        control.append(backward_fails(c))
    cell = f"+{joined(dw)}"
    if db != dw:
        cell = f"w +{joined(dw)} b +{joined(db)}"
    cell += " " + ("error" if all(fails) else "ok" if not any(fails) else
                   "/".join("error" if f else "ok" for f in fails))
    if any(silent):
        cell += ", silent"
    if any(control):
        cell += " (control error)"
    return cell, grads


def variants(cls, **kw):
    params = inspect.signature(cls.__init__).parameters
    out = {"loop": None, "foreach": None, "fused": None}
    for name, extra in (("loop", {"foreach": False} if "foreach" in params else {}),
                        ("foreach", {"foreach": True}),
                        ("fused", {"fused": True})):
        if name != "loop" and name not in params:
            out[name] = "n/a"
            continue
        try:
            out[name] = measure(lambda p: cls(p, **kw, **extra))[0]
        except Exception as e:  # torch refuses the variant
            msg = str(e).splitlines()[0] if str(e) else type(e).__name__
            out[name] = f"unsupported: {msg[:80]}"
    return out


def main():
    torch.set_num_threads(1)
    o = torch.optim
    cases = [
        ("SGD", o.SGD, dict(lr=0.1)),
        ("SGD momentum=0.9", o.SGD, dict(lr=0.1, momentum=0.9)),
        ("SGD momentum=0.9 nesterov", o.SGD, dict(lr=0.1, momentum=0.9, nesterov=True)),
        ("SGD weight_decay=0.01", o.SGD, dict(lr=0.1, weight_decay=0.01)),
        ("Adam", o.Adam, dict(lr=0.01)),
        ("AdamW", o.AdamW, dict(lr=0.01)),
        ("RMSprop", o.RMSprop, dict(lr=0.01)),
        ("Adagrad", o.Adagrad, dict(lr=0.01)),
    ]
    for name, cls, kw in cases:
        for variant, cell in variants(cls, **kw).items():
            print(f"case\t{name}\t{variant}\t{cell}")
    print(f"case\tLBFGS max_iter=1\tloop\t{measure(lambda p: o.LBFGS(p, lr=0.1, max_iter=1))[0]}")
    sgd = lambda p: o.SGD(p, lr=0.1)
    for none in (True, False):
        cell, grads = measure(sgd, write=lambda opt, lin, n=none: opt.zero_grad(set_to_none=n))
        print(f"case\tzero_grad(set_to_none={none})\tloop\t{cell}, grad {joined(grads)}")
    cell, _ = measure(sgd, fill=False)
    print(f"case\tSGD step, every grad None\tloop\t{cell}")

    def inplace(opt, lin):
        with torch.no_grad():
            lin.weight.mul_(0.5)
            lin.bias.mul_(0.5)

    def data(opt, lin):
        lin.weight.data.mul_(0.5)
        lin.bias.data.mul_(0.5)

    def detached(opt, lin):
        lin.weight.detach().mul_(0.5)
        lin.bias.detach().mul_(0.5)

    print(f"case\tcontrol: p.mul_(0.5) under no_grad\tloop\t{measure(sgd, write=inplace)[0]}")
    print(f"case\tcontrol: p.data.mul_(0.5)\tloop\t{measure(sgd, write=data)[0]}")
    print(f"case\tcontrol: p.detach().mul_(0.5)\tloop\t{measure(sgd, write=detached)[0]}")
    print(f"version\tpython\t{torch.__version__}", file=sys.stderr)


if __name__ == "__main__":
    main()
