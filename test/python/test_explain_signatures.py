"""The explainer must not change what a call of a torch function does.

Every torch function or method the explainer replaces is called with every
spelling its own signature allows (each split between positional and
keyword arguments, each optional argument left out, given, or given its
default) with the explainer off, armed and in the after-failure mode, on
graphs that train and on graphs that autograd rejects; the results (values,
dtypes, requires_grad, the gradients left behind), the exceptions (type and
message) and the warnings must be the same. Which functions are replaced is
found by comparing torch's namespaces before and after enable(), so a new
wrapper without a case here fails the test. The torch under test is the
interpreter's own (CTest runs this file once per torch venv).
"""

from __future__ import annotations

import collections
import functools
import importlib
import inspect
import itertools
import json
import os
import subprocess
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

import pytest
import torch
import torch.distributed as dist
from torch import nn
from torch.autograd.function import FunctionCtx
from torch.nn.parallel import DistributedDataParallel

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))

from ddpguard import explain  # noqa: E402

# ---------------------------------------------------------------------------
# Spellings.

def spellings(signature: inspect.Signature, skip: int = 0) -> Iterator[tuple[list, list]]:
    """Every spelling that binds to signature: (names given by position,
    names given by keyword).

    The first `skip` parameters (self) are left to the caller. Required
    parameters are always given; each optional one is left out or given. A
    *args parameter "*name" follows when all positional parameters are given
    by position; a **kwargs one adds "**name" or not."""
    params = list(signature.parameters.values())[skip:]
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    var_positional = next((p for p in params if p.kind is p.VAR_POSITIONAL), None)
    keyword_only = [p for p in params if p.kind is p.KEYWORD_ONLY]
    var_keyword = next((p for p in params if p.kind is p.VAR_KEYWORD), None)
    for k in range(len(positional) + 1):
        head = [p.name for p in positional[:k]]
        tails = [[]]
        if k == len(positional) and var_positional is not None:
            tails.append(["*" + var_positional.name])
        choices = []  # per remaining parameter: the ways to spell it
        for p in positional[k:] + keyword_only:
            ways = []
            if p.default is not p.empty:
                ways.append(None)  # left out
            if p.kind is not p.POSITIONAL_ONLY:
                ways.append(p.name)
            if not ways:  # a required positional-only one not given by position
                break
            choices.append(ways)
        else:
            more = [[]] + ([["**" + var_keyword.name]] if var_keyword else [])
            for tail, picked, extra in itertools.product(
                    tails, itertools.product(*choices), more):
                yield head + tail, [n for n in picked if n is not None] + extra


def spell(values: dict[str, Any], by_position: list, by_keyword: list) -> tuple[tuple, dict]:
    args: list = []
    for name in by_position:
        args.extend(values[name] if name.startswith("*") else (values[name],))
    kwargs: dict = {}
    for name in by_keyword:
        kwargs.update(values[name] if name.startswith("**") else {name: values[name]})
    return tuple(args), kwargs


def with_defaults(signature: inspect.Signature, values: dict[str, Any]) -> dict[str, Any]:
    """values, with each optional parameter's default in place of its value."""
    out = dict(values)
    for p in signature.parameters.values():
        if p.default is not p.empty:
            out[p.name] = p.default
    return out


# ---------------------------------------------------------------------------
# Outcomes.

def comparable(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return ("tensor", value.detach().tolist(), str(value.dtype), value.requires_grad,
                value.grad_fn is not None)
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(comparable(v) for v in value))
    if isinstance(value, dict):
        return tuple(sorted((k, comparable(v)) for k, v in value.items()))
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return type(value).__name__


@dataclass
class Outcome:
    result: Any
    error: Optional[tuple[str, str]]
    warned: list
    after: Any  # what the call left behind (gradients, parameters)
    # The explanation this call printed (not compared: only the explainer prints).
    report: Optional[str] = field(default=None, compare=False)


def call(fn: Callable, args: tuple, kwargs: dict, observe: Callable[[], Any]) -> Outcome:
    result, error = None, None
    before = explain.last_report()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = comparable(fn(*args, **kwargs))
        except Exception as e:  # noqa: BLE001 - the exception is the outcome
            error = (type(e).__name__, str(e))
    warned = [(w.category.__name__, str(w.message)) for w in caught]
    report = explain.last_report()
    return Outcome(result, error, warned, comparable(observe()),
                   report if report is not before else None)


# ---------------------------------------------------------------------------
# The wrapped functions, each with a fresh graph per call.

class Graph:
    """w, x -> sigmoid(w * x) -> (optionally written in place) -> sum."""

    def __init__(self, stale: bool) -> None:
        self.w = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
        self.x = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
        y = torch.sigmoid(self.w * self.x)
        if stale:
            y.mul_(2.0)  # sigmoid saved y: the backward fails
        self.out = y.sum()
        self.one = torch.ones(())

    def grads(self) -> Any:
        return [self.w.grad, self.x.grad]


def autograd_values(g: Graph) -> dict[str, Any]:
    return {
        "tensors": g.out, "outputs": g.out, "inputs": [g.w, g.x],
        "grad_tensors": g.one, "grad_outputs": g.one, "grad_variables": g.one,
        "gradient": g.one, "retain_graph": True, "create_graph": True,
        "only_inputs": False, "allow_unused": True, "is_grads_batched": True,
        "materialize_grads": True,
    }


class Probe(nn.Module):
    """A forward with every kind of parameter, for nn.Module.__call__."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, a, b=None, /, c=1.0, *rest, scale=2.0, **extra):
        y = torch.sigmoid(self.lin(a)) * c * scale
        if b is not None:
            y = y + b
        for r in rest:
            y = y * r
        for v in extra.values():
            y = y - v
        return y


@dataclass
class Case:
    name: str
    original: Callable          # the function as torch defines it
    # one call: (the callable to spell, values by parameter name, what it left)
    make: Callable[[bool], tuple[Callable, dict[str, Any], Callable[[], Any]]]
    skip: int = 0               # parameters bound by the callable (self)
    stale: tuple = (False, True)
    values: list = field(default_factory=list)


def _autograd_case(name: str, attr: str) -> Case:
    def make(stale: bool):
        g = Graph(stale)
        return getattr(torch.autograd, attr), autograd_values(g), g.grads
    return Case(name, getattr(torch.autograd, attr), make)


def _tensor_backward(stale: bool):
    g = Graph(stale)
    values = autograd_values(g)
    values["inputs"] = [g.w]
    return g.out.backward, values, g.grads


def _optimizer_case(kind: type, method: str) -> Case:
    def make(stale: bool):
        torch.manual_seed(0)
        model = nn.Linear(3, 2)
        opt = kind(model.parameters(), lr=0.1)
        x = torch.randn(4, 3)

        def closure():
            opt.zero_grad()
            loss = model(x).pow(2).sum()
            loss.backward()
            return loss

        closure().detach()  # gradients for step() and zero_grad() to act on
        values = {"closure": closure, "set_to_none": False}
        return (getattr(opt, method), values,
                lambda: [list(model.parameters()), [p.grad for p in model.parameters()]])
    return Case(f"{kind.__name__}.{method}", getattr(kind, method), make, skip=1,
                stale=(False,))


def _module_call(stale: bool):
    torch.manual_seed(0)
    probe = Probe()
    a = torch.randn(2, 3)
    values = {"a": a, "b": torch.ones(3), "c": 0.5, "*rest": (torch.full((3,), 3.0),),
              "scale": 4.0, "**extra": {"shift": torch.full((3,), 0.25)}}
    return probe, values, lambda: None


def _sync_buffers(stale: bool):
    torch.manual_seed(0)
    model = DistributedDataParallel(nn.BatchNorm1d(3))
    model(torch.randn(4, 3))
    return model._sync_buffers, {}, lambda: list(model.module.buffers())


class SaveProbe(torch.autograd.Function):
    """Saves what it is given, spelled as given, for FunctionCtx.save_for_backward."""

    @staticmethod
    def forward(ctx, x, args, kwargs):
        ctx.save_for_backward(*args, **kwargs)
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        total = sum(t.sum() for t in ctx.saved_tensors if t is not None)
        return grad * total, None, None


def _save_for_backward(stale: bool):
    x = torch.tensor([1.0, -2.0], requires_grad=True)
    saved = torch.tensor([3.0, 4.0])
    after = []

    def run(*args, **kwargs):
        out = SaveProbe.apply(x, args, kwargs)
        if stale:
            saved.add_(1.0)
        out.sum().backward()
        after.append(x.grad)
        return out

    return run, {"*tensors": (saved, None)}, lambda: after


def cases() -> list[Case]:
    found = [
        _autograd_case("torch.autograd.backward", "backward"),
        _autograd_case("torch.autograd.grad", "grad"),
        Case("Tensor.backward", torch.Tensor.backward, _tensor_backward, skip=1),
        Case("nn.Module.__call__", Probe.forward, _module_call, skip=1, stale=(False,)),
        Case("DistributedDataParallel._sync_buffers",
             DistributedDataParallel._sync_buffers, _sync_buffers, skip=1, stale=(False,)),
    ]
    for kind in (torch.optim.SGD, torch.optim.Adam):
        found.append(_optimizer_case(kind, "step"))
    found.append(_optimizer_case(torch.optim.SGD, "zero_grad"))
    found.append(Case("FunctionCtx.save_for_backward", FunctionCtx.save_for_backward,
                      _save_for_backward, skip=1))
    return found


# The attributes the explainer may replace, each with the case that calls it.
COVERED = {
    "torch.autograd.backward": "torch.autograd.backward",
    "torch.autograd.grad": "torch.autograd.grad",
    "Tensor.backward": "Tensor.backward",
    "Module.__call__": "nn.Module.__call__",
    "DistributedDataParallel._sync_buffers": "DistributedDataParallel._sync_buffers",
    "SGD.step": "SGD.step",
    "Adam.step": "Adam.step",
    "Optimizer.zero_grad": "SGD.zero_grad",
    "FunctionCtx.save_for_backward": "FunctionCtx.save_for_backward",
    # Called by torch alone, in each rank it starts, with one spelling:
    # test_explain.py runs programs/spawn_inplace_sigmoid.py.
    "torch.multiprocessing.spawn._wrap": None,
}
NAMESPACES = [torch.autograd, torch.Tensor, nn.Module, torch.optim.Optimizer,
              torch.optim.SGD, torch.optim.Adam, DistributedDataParallel, FunctionCtx,
              importlib.import_module("torch.multiprocessing.spawn")]


def label(namespace: Any, name: str) -> str:
    return f"{getattr(namespace, '__qualname__', None) or namespace.__name__}.{name}"


def outcomes(case: Case) -> list[dict]:
    found = []
    signature = inspect.signature(case.original)
    for stale in case.stale:
        for use_defaults in (False, True):
            for by_position, by_keyword in spellings(signature, case.skip):
                fn, values, observe = case.make(stale)  # fresh tensors for each call
                if use_defaults:
                    values = with_defaults(signature, values)
                args, kwargs = spell(values, by_position, by_keyword)
                outcome = vars(call(fn, args, kwargs, observe))
                outcome["spelling"] = (f"{case.name}(positional {by_position}, keyword "
                                       f"{by_keyword}, stale {stale}, defaults {use_defaults})")
                found.append(outcome)
    return found


def run_cases(mode: str, store: str) -> dict:
    """Every case's outcomes with the explainer off or in mode, in this process."""
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=0, world_size=1)
    try:
        if mode == "off":
            return {"outcomes": {c.name: outcomes(c) for c in cases()}}
        before = {(ns, name): value for ns in NAMESPACES for name, value in vars(ns).items()}
        explain.enable(mode)
        try:
            found = {c.name: outcomes(c) for c in cases()}
            replaced, differ = [], []
            for ns in NAMESPACES:
                for name, value in vars(ns).items():
                    old = before.get((ns, name), _ABSENT)
                    if old is value:
                        continue
                    replaced.append(label(ns, name))
                    # A partial (the spawned ranks' entry) has no name: its
                    # signature must be the original's.
                    n = 1 if isinstance(value, functools.partial) else None
                    if old is _ABSENT or _face(old)[:n] != _face(value)[:n]:
                        differ.append(label(ns, name))
        finally:
            explain.disable()
        return {"outcomes": found, "replaced": replaced, "differ": differ}
    finally:
        dist.destroy_process_group()


_ABSENT = object()


def _face(fn: Any) -> tuple:
    """What introspection sees of a function: its signature, names and doc."""
    return (str(inspect.signature(fn)),) + tuple(
        getattr(fn, a, None) for a in ("__name__", "__qualname__", "__module__", "__doc__"))


# What each case's failing calls must name as the stale tensor.
STALE = {"FunctionCtx.save_for_backward": "tensor: a tensor SaveProbe.forward saved"}
STALE = collections.defaultdict(lambda: "tensor: the output of Sigmoid", STALE)


def run_child(mode: str, tmp_path: Path) -> dict:
    """run_cases in a fresh interpreter: torch warns some things once a process."""
    done = subprocess.run([sys.executable, __file__, mode, str(tmp_path / f"store-{mode}")],
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr[-5000:]
    return json.loads(done.stdout)


@pytest.mark.parametrize("mode", ["armed", "after-failure"])
def test_every_spelling_behaves_the_same(mode: str, tmp_path: Path) -> None:
    without = run_child("off", tmp_path)["outcomes"]
    with_ = run_child(mode, tmp_path)
    assert set(with_["replaced"]) <= set(COVERED), with_["replaced"]
    assert "torch.autograd.grad" in with_["replaced"]  # the comparison sees wrappers
    assert with_["differ"] == [], "signature, name or doc changed"
    assert with_["outcomes"].keys() == without.keys()
    failing = 0
    for name, expected in without.items():
        got = with_["outcomes"][name]
        assert len(got) == len(expected) and len(got) > 0, name
        for a, b in zip(expected, got):
            report = b.pop("report")
            assert a.pop("report") is None
            assert a == b, f"without:\n{a}\nwith:\n{b}"
            # Each spelling autograd rejects is explained, the stale tensor
            # found from the roots however they were passed.
            if b["error"] and "modified by an inplace operation" in b["error"][1]:
                failing += 1
                assert report and STALE[name] in report, (b, report)
    assert failing > 0


@pytest.mark.parametrize("name", ["backward", "grad"])
def test_autograd_wrappers_keep_their_signatures(name: str) -> None:
    original = getattr(torch.autograd, name)
    explain.enable("after-failure")
    try:
        wrapped = getattr(torch.autograd, name)
        assert wrapped is not original
        assert inspect.signature(wrapped) == inspect.signature(original)
        for attr in ("__name__", "__qualname__", "__module__", "__doc__"):
            assert getattr(wrapped, attr) == getattr(original, attr), attr
    finally:
        explain.disable()
    assert getattr(torch.autograd, name) is original


if __name__ == "__main__":
    json.dump(run_cases(sys.argv[1], sys.argv[2]), sys.stdout, default=repr)
