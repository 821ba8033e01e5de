"""Confirms lib/Torch/SavedOperands.def against PyTorch's own DDP.

    torchrun --standalone --nproc-per-node 2 confirm_table.py SavedOperands.def

For every entry of the table, a tiny module holds a buffer that the forward
passes to the operation, wrapped in torch.nn.parallel.DistributedDataParallel
(gloo, CPU, broadcast_buffers=True); two forwards run, then one backward of
both. The broadcast before the second forward overwrites the buffer in place,
so the backward fails exactly when the first forward's graph saved it. Cases
per entry:

- operand i is the buffer, every other floating operand requires grad
  (derived from a Linear layer's output): the table predicts a failure iff
  a rule "i:jk" names another operand j or k;
- the result of the operation on the buffer (operand 0, the others without
  grad) is multiplied by a value that requires grad, which saves the
  result: the table predicts a failure iff the result is a View (it shares
  the buffer's version counter).

Then the module table of lib/Frontend/SavedBuffers.cpp: BatchNorm with running
statistics fails in train and eval mode, without them it trains, and so do
InstanceNorm with tracked statistics, LayerNorm and GroupNorm.

Each rank runs every case and exits 1 naming the cases whose outcome differs
from the prediction.
"""
import gc
import re
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

N = 4  # every floating operand is [N, N] unless its kind says otherwise


def inplace_add(a, b):
    a += b
    return a


def inplace_sub(a, b):
    a -= b
    return a


def inplace_mul(a, b):
    a *= b
    return a


def inplace_div(a, b):
    a /= b
    return a


# Operand kinds, one per operand of the C++ call (the table's numbering):
# "f" float [N, N], "v" float [N], "m" float [2, N, N], "r" running
# statistics [N] (never requires grad), "i" long index [N, N], "j" long index
# [N], "b" bool mask [N, N]; anything else (a dim) is passed as it is.
# (name, form) or name -> (operand kinds, call[, call on the buffer alone for
# the aliasing case when it differs]).
PROBES = {
    "operator+": ("ff", lambda a, b: a + b),
    "operator-": ("ff", lambda a, b: a - b),
    "add": ("ff", torch.add),
    "sub": ("ff", torch.sub),
    "subtract": ("ff", torch.subtract),
    "neg": ("f", torch.neg),
    "operator+=": ("ff", inplace_add),
    "operator-=": ("ff", inplace_sub),
    "add_": ("ff", lambda a, b: a.add_(b)),
    "sub_": ("ff", lambda a, b: a.sub_(b)),
    "operator*": ("ff", lambda a, b: a * b),
    "mul": ("ff", torch.mul),
    "multiply": ("ff", torch.multiply),
    "operator*=": ("ff", inplace_mul),
    "mul_": ("ff", lambda a, b: a.mul_(b)),
    "operator/": ("ff", lambda a, b: a / b),
    "div": ("ff", torch.div),
    "divide": ("ff", torch.divide),
    "true_divide": ("ff", torch.true_divide),
    "operator/=": ("ff", inplace_div),
    "div_": ("ff", lambda a, b: a.div_(b)),
    "pow": ("ff", torch.pow),
    "addcmul": ("fff", torch.addcmul),
    "addcdiv": ("fff", torch.addcdiv),
    "lerp": ("fff", torch.lerp),
    "maximum": ("ff", torch.maximum),
    "minimum": ("ff", torch.minimum),
    "max": ("ff", torch.max),
    "min": ("ff", torch.min),
    "atan2": ("ff", torch.atan2),
    "clamp": ("fff", lambda a, lo, hi: torch.clamp(a, min=lo, max=hi)),
    "matmul": ("ff", torch.matmul),
    "mm": ("ff", torch.mm),
    "bmm": ("mm", torch.bmm),
    "mv": ("fv", torch.mv),
    "dot": ("vv", torch.dot),
    "einsum": (["ij,jk,kl->il", "f", "f", "f"], torch.einsum),
    "addmm": ("fff", torch.addmm),
    ("linear", "Functional"): ("ff", F.linear),
    ("where", "Function"): ("bff", torch.where),
    ("where", "Method"): ("fbf", lambda a, c, b: a.where(c, b)),
    "masked_fill": (["f", "b", 0.5], torch.masked_fill),
    "masked_fill_": (["f", "b", 0.5], lambda a, m, v: a.masked_fill_(m, v)),
    "operator[]": ("fi", lambda a, i: a[i], lambda a: a[1]),
    "index": ("fi", lambda a, i: a[i], lambda a: a[1:3]),
    "index_select": (["f", 0, "j"], torch.index_select),
    "gather": (["f", 1, "i"], torch.gather),
    "scatter": (["f", 1, "i", "f"], torch.scatter),
    "scatter_add": (["f", 1, "i", "f"], torch.scatter_add),
    ("embedding", "Functional"): ("jf", F.embedding),
    ("batch_norm", "Function"): (
        "fvvrr",
        lambda x, w, b, m, v: torch.batch_norm(x, w, b, m, v, True, 0.1, 1e-5, False)),
    ("batch_norm", "Functional"): (
        "frrv", lambda x, m, v, w: F.batch_norm(x, m, v, weight=w, training=True)),
    "exp": ("f", torch.exp),
    "log": ("f", torch.log),
    "sigmoid": ("f", torch.sigmoid),
    "tanh": ("f", torch.tanh),
    "relu": ("f", torch.relu),
    "sqrt": ("f", torch.sqrt),
    "rsqrt": ("f", torch.rsqrt),
    "abs": ("f", torch.abs),
    "sin": ("f", torch.sin),
    "cos": ("f", torch.cos),
    "reciprocal": ("f", torch.reciprocal),
    "square": ("f", torch.square),
    "softmax": ("f", lambda a: torch.softmax(a, 1)),
    "log_softmax": ("f", lambda a: torch.log_softmax(a, 1)),
    "sum": ("f", torch.sum),
    "mean": ("f", torch.mean),
    "clone": ("f", torch.clone),
    "repeat": ("f", lambda a: a.repeat(1, 1)),
    "flip": ("f", lambda a: torch.flip(a, [0])),
    ("cat", "Function"): ("ff", lambda a, b: torch.cat([a, b])),
    ("stack", "Function"): ("ff", lambda a, b: torch.stack([a, b])),
    "view": ("f", lambda a: a.view(N * N)),
    "view_as": ("ff", lambda a, b: a.view_as(b)),
    "reshape": ("f", lambda a: a.reshape(N * N)),
    "reshape_as": ("ff", lambda a, b: a.reshape_as(b)),
    "slice": ("f", lambda a: a[1:3]),
    "narrow": ("f", lambda a: a.narrow(0, 1, 2)),
    "select": ("f", lambda a: a.select(0, 1)),
    "unsqueeze": ("f", lambda a: a.unsqueeze(0)),
    "squeeze": ("f", lambda a: a.unsqueeze(0).squeeze(0)),
    "expand": ("f", lambda a: a.expand(N, N)),
    "expand_as": ("ff", lambda a, b: a.expand_as(b)),
    "t": ("f", torch.t),
    "transpose": ("f", lambda a: a.transpose(0, 1)),
    "permute": ("f", lambda a: a.permute(1, 0)),
    "flatten": ("f", torch.flatten),
    "contiguous": ("f", lambda a: a.contiguous()),
    "to": ("f", lambda a: a.to(torch.float32)),
    "type_as": ("ff", lambda a, b: a.type_as(b)),
    "detach": ("f", torch.detach),
    "operator==": ("ff", lambda a, b: a == b),
    "operator!=": ("ff", lambda a, b: a != b),
    "operator<": ("ff", lambda a, b: a < b),
    "operator>": ("ff", lambda a, b: a > b),
    "operator<=": ("ff", lambda a, b: a <= b),
    "operator>=": ("ff", lambda a, b: a >= b),
    "eq": ("ff", torch.eq),
    "ne": ("ff", torch.ne),
    "lt": ("ff", torch.lt),
    "gt": ("ff", torch.gt),
    "le": ("ff", torch.le),
    "ge": ("ff", torch.ge),
    "size": ("f", lambda a: a.size(0)),
    "dim": ("f", lambda a: a.dim()),
    "zeros_like": ("f", torch.zeros_like),
    "ones_like": ("f", torch.ones_like),
    "randn_like": ("f", torch.randn_like),
}
# Factories take no tensor operand, so no buffer can reach them.
NO_OPERAND = {"zeros", "ones", "full", "arange", "randn", "rand"}
FLOATING = {"f", "v", "m"}
TENSOR = FLOATING | {"r", "i", "j", "b"}


def read_table(path):
    """[(name, form, result, {saved operand or "r": trigger operands})]."""
    entries = []
    pattern = re.compile(r'^SAVED_OP\("([^"]+)", (\w+), (\w+), "([^"]*)"\)')
    with open(path) as f:
        for line in f:
            m = pattern.match(line)
            if not m:
                continue
            rules = {}
            for rule in m.group(4).split():
                saved, triggers = rule.split(":")
                rules[saved if saved == "r" else int(saved)] = {
                    int(t) for t in triggers}
            entries.append((m.group(1), m.group(2), m.group(3), rules))
    return entries


def constant(kind):
    """A buffer or an operand that never requires grad, fixed across ranks."""
    g = torch.Generator().manual_seed(7)
    if kind == "f":
        return torch.rand(N, N, generator=g) + 0.5
    if kind in ("v", "r"):
        return torch.rand(N, generator=g) + 0.5
    if kind == "m":
        return torch.rand(2, N, N, generator=g) + 0.5
    if kind == "i":
        return torch.randint(0, N, (N, N), generator=g)
    if kind == "j":
        return torch.randint(0, N, (N,), generator=g)
    if kind == "b":
        return torch.rand(N, N, generator=g) > 0.5
    return kind


def operand(kind, x, layer_out):
    """A floating operand from the forward: layer_out requires grad, x not."""
    base = x if layer_out is None else layer_out
    if kind == "f":
        return base
    if kind == "v":
        return base[0]
    if kind == "m":
        return base.unsqueeze(0).expand(2, N, N)
    return constant(kind)


class Probe(nn.Module):
    """forward(x): call(operands) with the buffer at `slot`; the floating
    operands in `grad_slots` come from Linear(x), the others are x itself."""

    def __init__(self, kinds, call, slot, grad_slots, times_grad):
        super().__init__()
        self.layer = nn.Linear(N, N)
        self.register_buffer("buf", constant(kinds[slot]))
        self.kinds, self.call, self.slot = kinds, call, slot
        self.grad_slots, self.times_grad = grad_slots, times_grad

    def forward(self, x):
        h = self.layer(x)
        ops = [self.buf if i == self.slot
               else operand(k, x.clone(), h if i in self.grad_slots else None)
               for i, k in enumerate(self.kinds)]
        result = self.call(*ops)
        if isinstance(result, tuple):
            result = result[0]
        if not torch.is_tensor(result):
            result = torch.tensor(float(result))
        if self.times_grad:
            # h.sum() requires grad, so the product saves the result.
            return h.sum() * result.float()
        return h.sum() + result.float().sum()


class ResultWritten(nn.Module):
    """forward(x): call(operands), operand 0 from Linear(x) (it requires
    grad), then the result written in place: the backward fails iff the
    operation saved its result (a "r:" rule)."""

    def __init__(self, kinds, call):
        super().__init__()
        self.layer = nn.Linear(N, N)
        self.kinds, self.call = kinds, call

    def forward(self, x):
        h = self.layer(x)
        ops = [operand(k, x.clone(), h if i == 0 else None)
               for i, k in enumerate(self.kinds)]
        result = self.call(*ops)
        if isinstance(result, tuple):
            result = result[0]
        result.mul_(2)
        return result.sum()


class Norm(nn.Module):
    def __init__(self, norm, instance=False):
        super().__init__()
        self.fc1, self.norm, self.fc2 = nn.Linear(N, 8), norm, nn.Linear(8, 3)
        self.instance = instance

    def forward(self, x):
        h = self.fc1(x)
        if self.instance:
            return self.fc2(self.norm(h.t().unsqueeze(0)).squeeze(0).t())
        return self.fc2(self.norm(h))


def cases(entries):
    """[(case name, make module, eval mode, predicted failure)]."""
    out = []
    for name, form, result, rules in entries:
        if name in NO_OPERAND:
            continue
        probe = PROBES.get((name, form)) or PROBES.get(name)
        if probe is None:
            raise SystemExit(f"confirm_table.py: no probe for {name} ({form})")
        kinds, call = probe[0], probe[1]
        alias_call = probe[2] if len(probe) > 2 else call
        inplace = name.endswith("_") or (name.endswith("=") and name[-2] in "+-*/")
        floating = {i for i, k in enumerate(kinds) if k in FLOATING}
        for slot, kind in enumerate(kinds):
            # Only tensors can be buffers; an in-place operation on a buffer
            # would make it require grad.
            if kind not in TENSOR or (inplace and slot == 0):
                continue
            grad = floating - {slot}
            predicted = bool(rules.get(slot, set()) & grad)
            out.append((f"{name}/{form} operand {slot} buffer, others grad",
                        lambda k=kinds, c=call, s=slot, g=grad: Probe(k, c, s, g, False),
                        False, predicted))
        if kinds[0] in FLOATING and result == "New" and not inplace:
            out.append((f"{name}/{form} result written in place",
                        lambda k=kinds, c=call: ResultWritten(k, c),
                        False, 0 in rules.get("r", set())))
        if kinds[0] in FLOATING:
            alias_kinds = kinds if alias_call is call else kinds[:1]
            out.append((f"{name}/{form} result times grad",
                        lambda k=alias_kinds, c=alias_call: Probe(k, c, 0, set(), True),
                        False, result == "View"))
    norms = [
        ("BatchNorm1d", lambda: Norm(nn.BatchNorm1d(8)), True),
        ("BatchNorm1d track_running_stats=False",
         lambda: Norm(nn.BatchNorm1d(8, track_running_stats=False)), False),
        ("InstanceNorm1d track_running_stats=True",
         lambda: Norm(nn.InstanceNorm1d(8, track_running_stats=True), True), False),
        ("LayerNorm", lambda: Norm(nn.LayerNorm(8)), False),
        ("GroupNorm", lambda: Norm(nn.GroupNorm(2, 8)), False),
    ]
    for label, make, predicted in norms:
        out.append((f"module {label} train", make, False, predicted))
        out.append((f"module {label} eval", make, True, predicted))
    return out


def run_case(rank, make, eval_mode):
    """True if the backward fails because a saved tensor was overwritten."""
    torch.manual_seed(0)
    model = make()
    if eval_mode:
        model.eval()
    ddp = DDP(model)
    torch.manual_seed(100 + rank)
    a, b = torch.randn(N, N), torch.randn(N, N)
    try:
        o1 = ddp(a)
        o2 = ddp(b)
        (o1.sum() + o2.sum()).backward()
    except RuntimeError as e:
        if "modified by an inplace operation" not in str(e):
            raise
        # The failed graph may keep this DDP alive through the traceback.
        del e
        gc.collect()
        return True
    return False


def main():
    if len(sys.argv) != 2:
        raise SystemExit("usage: torchrun ... confirm_table.py SavedOperands.def")
    entries = read_table(sys.argv[1])
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    all_cases = cases(entries)
    wrong = []
    for label, make, eval_mode, predicted in all_cases:
        measured = run_case(rank, make, eval_mode)
        if measured != predicted:
            wrong.append(f"{label}: table says {'fails' if predicted else 'trains'}, "
                         f"measured {'fails' if measured else 'trains'}")
    for line in wrong:
        print(f"rank {rank}: MISMATCH {line}", file=sys.stderr)
    if rank == 0:
        print(f"{len(entries)} table entries, {len(all_cases)} cases, "
              f"{len(all_cases) - len(wrong)} as predicted")
    dist.destroy_process_group()
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
