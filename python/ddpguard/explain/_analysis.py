"""Explaining a backward that autograd rejected with its version-counter error.

Which saved tensors are stale is decided by autograd itself: every saved
tensor of every node the backward can reach is unpacked through the node's
``_saved_*`` attribute, which runs the same version check as the backward
(``SavedVariable::unpack``). The recorder (_record.py) then says who saved
each stale tensor and who wrote it since.
"""

from __future__ import annotations

import linecache
import os
import re
import sys
from dataclasses import dataclass
from typing import Any, Iterable, Optional

import torch

from ._record import Site, State, Write, saved_by_function, storage_key

VERSION_ERROR = "modified by an inplace operation"
_VERSIONS = re.compile(r"is at version (\d+); expected version (\d+)")

_saved_attrs: dict[type, tuple[str, ...]] = {}


def is_version_error(exc: BaseException) -> bool:
    return isinstance(exc, RuntimeError) and VERSION_ERROR in str(exc)


def torch_version() -> tuple[int, int, int]:
    parts = re.match(r"(\d+)\.(\d+)\.(\d+)", torch.__version__)
    return tuple(int(p) for p in parts.groups()) if parts else (0, 0, 0)  # type: ignore


@dataclass
class Stale:
    node: Any
    attr: str                  # "running_mean", "result", ...
    message: str               # autograd's error for it
    now: int
    expected: int
    tensor: Optional[torch.Tensor] = None


def _attrs(node: Any) -> tuple[str, ...]:
    """The node's saved-tensor attributes, from its type: reading them from
    the node would unpack them, and a stale one raises."""
    kind = type(node)
    attrs = _saved_attrs.get(kind)
    if attrs is None:
        attrs = tuple(a for a in dir(kind) if a.startswith("_saved_"))
        if getattr(kind, "saved_tensors", None) is not None:  # a Python Function's node
            attrs += ("saved_tensors",)
        _saved_attrs[kind] = attrs
    return attrs


def _grab(node: Any, attr: str, expected: int, message: str,
          rejected: Optional[torch.Tensor] = None) -> Optional[torch.Tensor]:
    """The stale tensor itself, through its SavedTensor's pack hook.

    Hooks turn autograd's own version check off for that saved tensor, so
    the unpack hook makes the same check and raises the same error. Where
    the silent-writes mode's hooks are on it already, their unpack hook
    handed over the tensor it rejected (`rejected`)."""
    if not attr.startswith("_saved_"):
        return None
    raw = getattr(node, "_raw" + attr, None)
    if raw is None or isinstance(raw, (list, tuple)):
        return None
    box: list = []

    def pack(t: torch.Tensor) -> torch.Tensor:
        box.append(t)
        return t

    def unpack(t: torch.Tensor) -> torch.Tensor:
        if t._version != expected:
            raise RuntimeError(message)
        return t

    try:
        raw.register_hooks(pack, unpack)
    except RuntimeError:  # hooks already set (saved_tensors_hooks), or freed
        return rejected
    return box[0] if box else None


@dataclass
class Probe:
    stale: list            # Stale, each tensor autograd would reject
    unreadable: int = 0    # nodes whose saved tensors could not be read
    why: str = ""          # the first such node and its error


def find_stale(roots: Iterable[Any], state: Optional[State] = None) -> Probe:
    """Every saved tensor that autograd would reject, reachable from roots.

    A node that cannot be read (a compiled graph's, a Function whose saved
    tensors were freed) is counted, and the walk goes on."""
    stack = []
    for r in roots:
        fn = getattr(r, "grad_fn", None) if isinstance(r, torch.Tensor) else None
        if fn is not None:
            stack.append(fn)
    seen: set[int] = set()
    keep: list = []
    found = Probe([])
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        keep.append(node)
        try:
            _probe_node(node, found.stale, state.silent if state is not None else None)
            stack.extend(nxt for nxt, _ in getattr(node, "next_functions", ())
                         if nxt is not None and id(nxt) not in seen)
        except Exception as e:  # noqa: BLE001 - one node must not end the walk
            found.unreadable += 1
            found.why = found.why or f"{type(node).__name__}: {type(e).__name__}: {e}"
    return found


def _probe_node(node: Any, stale: list, silent: Any) -> None:
    for attr in _attrs(node):
        try:
            getattr(node, attr)
        except RuntimeError as e:
            rejected = silent.take_rejected() if silent is not None else None
            message = str(e)
            versions = _VERSIONS.search(message)
            if VERSION_ERROR in message and versions:
                now, expected = int(versions.group(1)), int(versions.group(2))
                if attr == "saved_tensors":
                    stale.append(Stale(node, attr, message, now, expected,
                                       saved_by_function(node, now, expected)))
                else:
                    stale.append(Stale(node, attr[len("_saved_"):], message, now, expected,
                                       _grab(node, attr, expected, message, rejected)))
        except Exception:  # noqa: BLE001 - a field that is not a tensor
            pass


# ---------------------------------------------------------------------------
# Naming.

def _same_tensor(a: torch.Tensor, b: torch.Tensor) -> bool:
    try:
        return (a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
                and a.storage_offset() == b.storage_offset()
                and a.shape == b.shape and a.stride() == b.stride())
    except (RuntimeError, NotImplementedError):
        return False


def _is_ddp(module: Any) -> bool:
    try:
        from torch.nn.parallel import DistributedDataParallel
    except ImportError:
        return False
    return isinstance(module, DistributedDataParallel)


def _is_compiled(module: Any) -> bool:
    """A torch.compile'd module (OptimizedModule), which holds the original."""
    return isinstance(getattr(module, "_orig_mod", None), torch.nn.Module)


def _inner(root: Any) -> Any:
    """The user's module inside DistributedDataParallel and torch.compile."""
    while _is_ddp(root) or _is_compiled(root):
        root = root.module if _is_ddp(root) else root._orig_mod
    return root


def _views(a: torch.Tensor, b: torch.Tensor) -> bool:
    try:
        return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):
        return False


def variable_name(obj: Any) -> Optional[str]:
    """The name the script's top level gives obj, if any."""
    main = sys.modules.get("__main__")
    for name, value in list(vars(main).items()) if main else ():
        if value is obj and not name.startswith("_"):
            return name
    return None


def name_tensor(t: torch.Tensor, state: State) -> Optional[tuple[str, str, Any, Any, bool]]:
    """(qualified name, "parameter"|"buffer", owning submodule, root, is a view) of t."""
    for exact in (True, False):
        match = _same_tensor if exact else _views
        for root in state.live_roots():
            inner = _inner(root)
            for kind, items in (("parameter", inner.named_parameters()),
                                ("buffer", inner.named_buffers())):
                for name, p in items:
                    if match(p, t):
                        owner_name = name.rpartition(".")[0]
                        owner = inner.get_submodule(owner_name) if owner_name else inner
                        return name, kind, owner, root, not exact
        for opt in list(state.optimizers):
            for gi, group in enumerate(opt.param_groups):
                for pi, p in enumerate(group["params"]):
                    if match(p, t):
                        return (f"param_groups[{gi}]['params'][{pi}] of "
                                f"{type(opt).__name__}", "parameter", None, None, not exact)
    return None


def module_path(module: Any, state: State) -> str:
    for root in state.live_roots():
        inner = _inner(root)
        for name, m in inner.named_modules():
            if m is module:
                if not name:
                    return root_name(root)
                return f"'{name}' ({type(m).__name__}) in {root_name(root)}"
    return type(module).__name__


def _named_title(named: tuple[str, str, Any, Any, bool], saver: str) -> str:
    """The title of a tensor name_tensor named: kind, name, the module that
    owns it, the model it is in, and the view its saver (a node's name) kept."""
    name, kind, owner, root, view = named
    owner_text = (f" ({type(owner).__name__} '{name.rpartition('.')[0]}')"
                  if owner is not None and owner is not root
                  and name.rpartition(".")[0] else "")
    root_text = f" of {root_name(root)}" if root is not None else ""
    return (f"{kind} {name}{owner_text}{root_text}"
            + (f", through a view saved by {saver}" if view else ""))


def root_name(root: Any) -> str:
    var = variable_name(root)
    if _is_ddp(root) or _is_compiled(root):
        wrapped = root.module if _is_ddp(root) else root._orig_mod
        inner = variable_name(wrapped) if not (_is_ddp(wrapped) or _is_compiled(wrapped)) else None
        spelled = "DistributedDataParallel" if _is_ddp(root) else "torch.compile"
        return (f"{spelled}({inner or root_name(wrapped)})"
                + (f" '{var}'" if var else ""))
    return type(root).__name__ + (f" '{var}'" if var else "")


def where(site: Optional[Site]) -> str:
    if site is None:
        return "an unknown line"
    filename, line, function = site
    try:
        shown = os.path.relpath(filename)
        if shown.startswith(".."):
            shown = filename
    except ValueError:
        shown = filename
    text = linecache.getline(filename, line).strip()
    return f"{shown}:{line} (in {function})" + (f": {text}" if text else "")


def describe(t: Optional[torch.Tensor]) -> str:
    if t is None:
        return ""
    dtype = str(t.dtype).replace("torch.", "")
    return f"[{', '.join(str(s) for s in t.shape)}] {dtype} on {t.device}"


# ---------------------------------------------------------------------------
# The report.

def _writes_after(stale: Stale, state: State) -> list[tuple[int, Write]]:
    t = stale.tensor
    if t is None:
        return []
    found = list(state.writes.of(t))
    for log in state.step_log.values():
        for write, params, before, after in log:
            for p, b, a in zip(params, before, after):
                if a != b and _views(p, t):
                    found.append((a, write))
    return sorted(((v, w) for v, w in found if stale.expected < v <= stale.now),
                  key=lambda entry: entry[0])


def _out_of_place(write: Write) -> str:
    what = write.what
    source = linecache.getline(write.site[0], write.site[1]) if write.site else ""
    if what.endswith("(inplace=True)"):
        callee = what[:-len("(inplace=True)")]
        return (f"{callee}(inplace=False)" if callee.startswith("nn.")
                else f"{callee}(..., inplace=False)")
    if what.endswith("__setitem__"):
        return ("assign into a copy: y = y.clone(); y[idx] = value, or build the "
                "result out of place (torch.where, Tensor.index_put without the _)")
    name = what.rpartition(".")[2]
    for op, sign in (("add_", "+"), ("sub_", "-"), ("mul_", "*"), ("div_", "/")):
        if name == op and f"{sign}=" in source:
            return f"y = y {sign} ... instead of y {sign}= ..."
    if name.endswith("_") and not name.endswith("__"):
        return f"y = y.{name[:-1]}(...) instead of y.{name}(...)"
    if what.endswith("(out=...)"):
        return f"drop out=: y = {what[:-len('(out=...)')]}(...)"
    return f"an out-of-place spelling of {what}"


def _optimizer(w: Write, short: bool = False) -> str:
    var = variable_name(w.optimizer)
    if short:
        return f"{var}.step()" if var else w.what
    return f"optimizer.step() of {type(w.optimizer).__name__}" + (f" '{var}'" if var else "")


def fixes(causes: dict[str, list[Write]]) -> list[str]:
    version = torch_version()
    found: list[str] = []
    if "ddp" in causes:
        flag = ("DistributedDataParallel(..., forward_sync_buffers=False) "
                "(broadcast_buffers=False before 2.13)" if version >= (2, 13, 0)
                else "DistributedDataParallel(..., broadcast_buffers=False) "
                "(forward_sync_buffers=False from 2.13)")
        found += [
            f"{flag}: buffers are no longer synchronised; each rank keeps its own "
            "running statistics;",
            "one DDP forward for all inputs: a module whose forward runs the wrapped "
            "module on each input, wrapped once in DDP (one broadcast, keeps buffer sync);",
            "broadcast once per backward: construct DDP with buffer sync off and "
            "broadcast the buffers from rank 0 yourself (torch.distributed.broadcast "
            "under torch.no_grad()) before the first forward after each backward "
            "(keeps buffer sync);",
        ]
        if version < (2, 12, 1):
            found.append(
                "upgrade to torch 2.12.1 or later: its DDP keeps the buffers' version "
                "counters through the broadcast (pytorch/pytorch#175851), and this "
                "backward then runs (on the broadcast buffers' values).")
    if "optimizer" in causes:
        opts = sorted({_optimizer(w, short=True) for w in causes["optimizer"]})
        found += [
            f"call {', '.join(opts)} after the last backward through the stepped "
            "module's graph (for a GAN: step the discriminator after the generator's "
            "backward, or detach the fake samples for the discriminator's loss);",
            "or recompute the forward after the step, and backward through the new graph.",
        ]
    if "inplace" in causes:
        spelled = []
        for w in causes["inplace"]:
            fix = _out_of_place(w)
            if fix not in spelled:
                spelled.append(fix)
        found.append("use the out-of-place spelling: " + "; ".join(spelled) + ";")
    if "unseen" in causes:
        found.append("use the out-of-place spelling of the op that wrote it (run without "
                     "--after-failure to have ddpguard name that op and its line);")
    if "param-write" in causes or "unseen-param" in causes:
        found.append(
            "make the write after the last backward through the graph that saved the "
            "tensor (after optimizer.step() for clamps and EMA updates), or write a "
            "copy of the weights;")
    return found


def _cause(write: Write, kind: Optional[str]) -> str:
    if write.kind == "inplace" and kind is not None and not write.grad_enabled:
        return "param-write"
    return write.kind


def _compiled(node: Any) -> bool:
    """A torch.compile'd graph's node (AOTAutograd's CompiledFunction)."""
    return type(node).__name__.startswith("CompiledFunction")


def _function_saved(s: Stale) -> str:
    where_from = ("a torch.compile'd forward" if _compiled(s.node) else
                  f"{type(s.node).__name__.removesuffix('Backward')}.forward")
    if s.tensor is None:
        return (f"a tensor {where_from} saved with ctx.save_for_backward (ddpguard "
                "did not see it saved: the Function ran before the explainer was enabled)")
    return f"a tensor {where_from} saved with ctx.save_for_backward"


def explain(exc: BaseException, roots: Iterable[Any], backward_site: Optional[Site],
            state: State, api: str) -> str:
    probe = find_stale(roots, state)
    stale = probe.stale
    rank = os.environ.get("RANK")
    if rank is None and torch.distributed.is_available() and torch.distributed.is_initialized():
        rank = str(torch.distributed.get_rank())  # a rank torchrun did not start (spawn)
    head = "ddpguard explain" + (f" (rank {rank})" if rank is not None else "")
    lines = [f"{head}: this {api} fails with autograd's in-place error "
             "(\"one of the variables needed for gradient computation has been "
             "modified by an inplace operation\")."]
    unreadable = (f"  ddpguard could not read the saved tensors of {probe.unreadable} "
                  f"node(s) of this graph (first: {probe.why})." if probe.unreadable else "")
    if not stale:
        lines.append(unreadable or (
            "  ddpguard found no stale saved tensor in the graph reachable from "
            "the tensors passed to it (the failing node may be in a graph it "
            "cannot walk, e.g. a custom C++ Function)."))
        return "\n".join(lines) + "\n"
    causes: dict[str, list[Write]] = {}
    first_node = None
    for s in stale:
        named = name_tensor(s.tensor, state) if s.tensor is not None else None
        if named:
            kind = named[1]
            title = _named_title(named, type(s.node).__name__)
        elif s.attr == "saved_tensors":
            kind = None
            title = _function_saved(s)
        else:
            kind = None
            op = type(s.node).__name__.removesuffix("Backward0").removesuffix("Backward1")
            title = (f"the output of {op}" if s.attr.startswith("result")
                     else f"the '{s.attr}' input of {op}")
        shape = describe(s.tensor)
        lines.append(f"  tensor: {title}" + (f", {shape}" if shape else ""))
        span = state.find_span(s.node._sequence_nr())
        what = (f"forward of {root_name(span.module)}" if span and span.module is not None
                else f"call of {span.what}" if span else "")
        saver = (f"in the {what} at {where(span.site)}" if span
                 else "in a forward ddpguard did not record")
        lines.append(f"    saved at version {s.expected} for backward by "
                     f"{type(s.node).__name__} (as '{s.attr}') {saver}")
        writes = _writes_after(s, state)
        if writes:
            lines.append("    then written:")
        for v, w in writes:
            if w.kind == "ddp":
                flag = ("broadcast_buffers=True / forward_sync_buffers=True"
                        if torch_version() >= (2, 13, 0) else "broadcast_buffers=True")
                text = (f"{w.what} ({flag}) before the forward at {where(w.site)}"
                        if w.in_forward else f"{w.what} ({flag}) at {where(w.site)}")
            elif w.kind == "optimizer":
                text = f"{_optimizer(w)} at {where(w.site)}"
            else:
                inside = (f" inside the forward of {module_path(w.module, state)}"
                          if w.module is not None else "")
                mode = "" if w.grad_enabled else " under no_grad"
                text = f"in-place {w.what}{inside}{mode} at {where(w.site)}"
            lines.append(f"      {text} -> version {v}")
            causes.setdefault(_cause(w, kind), []).append(w)
        if not writes:
            lines.append(f"    then written {s.now - s.expected} time(s) where ddpguard "
                         "could not see it (C++ code, another thread, or an in-place op "
                         f"in the after-failure mode), now at version {s.now}")
            causes.setdefault("unseen-param" if kind else "unseen", [])
        first_node = first_node or type(s.node).__name__
    lines.append(f"  the {api} at {where(backward_site)} needs "
                 + ("these tensors" if len(stale) > 1 else "this tensor")
                 + f" as saved, so autograd rejects it (at {first_node} or another node "
                 "listed above).")
    found = fixes(causes)
    if found:
        lines.append("  Fixes:")
        lines += [f"    {i}. {f}" for i, f in enumerate(found, 1)]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------
# The silent-writes mode's report (_silent.py found the changed tensors).

def _nodes_by_number(roots: Iterable[Any]) -> dict[int, str]:
    """Sequence number -> node name, for the graph reachable from roots."""
    stack = [r.grad_fn for r in roots
             if isinstance(r, torch.Tensor) and r.grad_fn is not None]
    names: dict[int, str] = {}
    seen: set[int] = set()
    keep: list = []  # ids of collected wrappers are reused
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        keep.append(node)
        try:
            names[node._sequence_nr()] = node.name()
        except RuntimeError:
            pass
        stack.extend(nxt for nxt, _ in getattr(node, "next_functions", ()))
    return names


def _fused(optimizer: Any) -> bool:
    return any(group.get("fused") for group in getattr(optimizer, "param_groups", ()))


def _silent_writes(saved: Any, state: State) -> list[tuple[Write, bool]]:
    """The writes ddpguard saw to saved's storage since it was saved, in
    order, each with whether it moved the version counter."""
    t = saved.tensor
    found = [(w, True) for _, w in state.writes.of(t) if w.seq > saved.writes_before]
    for log in state.step_log.values():
        for write, params, before, after in log:
            if write.seq <= saved.writes_before:
                continue
            for p, b, a in zip(params, before, after):
                if _views(p, t):
                    found.append((write, a != b))
                    break
    return sorted(found, key=lambda entry: entry[0].seq)


def explain_silent(changed: list, roots: Iterable[Any], backward_site: Optional[Site],
                   state: State, api: str) -> str:
    roots = list(roots)
    nodes = _nodes_by_number(roots)
    rank = os.environ.get("RANK")
    head = "ddpguard explain" + (f" (rank {rank})" if rank is not None else "")
    lines = [f"{head}: silent write: this {api} raised nothing, but "
             + ("tensors" if len(changed) > 1 else "a tensor")
             + " its forward saved changed before it ran, by writes invisible to "
             "autograd (the version counter did not move), so it computed gradients "
             "from values the forward did not see."]
    causes: dict[str, list[Write]] = {}
    seen_storages: set[tuple] = set()
    for saved in changed:
        t = saved.tensor
        key = (storage_key(t), t.storage_offset(), tuple(t.shape), t.stride())
        if key in seen_storages:
            continue
        seen_storages.add(key)
        node = ("torch.utils.checkpoint" if saved.checkpointed
                else saved.output_of or nodes.get(saved.node_nr, "a node"))
        named = name_tensor(t, state)
        kind = None
        if named:
            kind = named[1]
            title = _named_title(named, node)
        elif saved.output_of:
            title = f"the output of {saved.output_of.removesuffix('Backward0')}"
        else:
            title = f"a tensor saved by {node}"
        lines.append(f"  tensor: {title}, {describe(t)}")
        span = state.find_span(saved.node_nr)
        what = (f"forward of {root_name(span.module)}" if span and span.module is not None
                else f"call of {span.what}" if span else "")
        saver = (f"in the checkpointed call at {where(saved.site)}" if saved.checkpointed
                 else f"in the {what} at {where(span.site)}" if span
                 else "in a forward ddpguard did not record")
        lines.append(f"    saved at version {saved.version} for backward by {node} {saver}")
        writes = _silent_writes(saved, state)
        if writes and saved.checkpointed:
            lines.append("    then written (the backward recomputed the checkpointed "
                         "forward from the written values: autograd checks no version "
                         "counter there):")
        elif writes:
            lines.append(f"    then written (its version still {saved.version}: "
                         "autograd did not see these writes):")
        for w, bumped in writes:
            if w.kind == "optimizer":
                how = (" (fused=True: the fused kernel writes the parameters without "
                       "bumping their version counters)" if _fused(w.optimizer) else
                       "" if not bumped or saved.checkpointed
                       else " (through its own version counter)")
                text = f"{_optimizer(w)}{how} at {where(w.site)}"
            else:
                mode = "" if w.grad_enabled else " under no_grad"
                text = (f"in-place {w.what}{mode}, not counted by the saved tensor's version "
                        f"counter (a write through .data, or under "
                        f"_unsafe_preserve_version_counter) at {where(w.site)}")
            lines.append(f"      {text}")
            cause = w.kind if w.kind != "inplace" else "param-write" if kind else "inplace"
            causes.setdefault(cause, []).append(w)
        if not writes:
            lines.append("    then written where ddpguard could not see it (C++ code, or a "
                         "thread started before the explainer); its contents changed, "
                         f"its version did not (still {saved.version})")
            causes.setdefault("unseen-param" if kind else "silent-unseen", [])
    lines.append(f"  the {api} at {where(backward_site)} read "
                 + ("them" if len(seen_storages) > 1 else "it")
                 + " as changed; autograd raised nothing.")
    found = fixes(causes)
    if "silent-unseen" in causes:
        found.append("compute from a copy (y = y.clone()) before the write, or make the "
                     "write after the backward;")
    if "param-write" in causes or "unseen-param" in causes:
        found.append("a write that autograd counts (under torch.no_grad(), not through "
                     ".data nor under _unsafe_preserve_version_counter) makes autograd "
                     "raise its in-place error here instead of computing from the "
                     "changed values.")
    if found:
        lines.append("  Fixes:")
        lines += [f"    {i}. {f}" for i, f in enumerate(found, 1)]
    return "\n".join(lines) + "\n"
