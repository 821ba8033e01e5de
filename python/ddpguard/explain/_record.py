"""What the explainer records while the program runs.

Three things, from hooks torch offers (the optimizer step hooks, a
TorchFunctionMode) and two wrappers where a hook costs too much or is
missing (nn.Module.__call__, DistributedDataParallel._sync_buffers), so
nothing is compiled:

- the *timeline*: which autograd nodes each outermost module forward (and, in
  the armed mode, each op called outside a module) created, as a range of
  autograd sequence numbers with the user's source line;
- the *writes*: every bump of a tensor's version counter that ddpguard saw,
  per storage, with the version it left and what made it (an in-place op, an
  optimizer step, DistributedDataParallel's buffer broadcast);
- the root modules and optimizers, to name tensors at a failure.

Nothing here unpacks saved tensors: autograd's own version check decides
whether a backward fails (_analysis.py), so the explainer cannot disagree
with it.

Per thread: the module stack, the optimizer steps in progress, whether the
armed mode is popped (torch's mode stack is per thread) and the timeline
(autograd numbers nodes per thread). Threads started after enable() get the
armed mode too (threading.setprofile's hook, chained to any other).
"""

from __future__ import annotations

import bisect
import collections
import functools
import os
import sys
import threading
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import torch
from torch.overrides import TorchFunctionMode

from ._silent import SilentWrites

# (file, line, function) of a user frame.
Site = tuple[str, int, str]

_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep
_OWN_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_internal_files: dict[str, bool] = {}

# Present from torch 2.2; before that the timeline falls back to the output
# nodes' own sequence numbers (see _Timeline).
_next_sequence_nr: Optional[Callable[[], int]] = getattr(
    torch._C._autograd, "_get_sequence_nr", None)


def _is_internal(filename: str) -> bool:
    internal = _internal_files.get(filename)
    if internal is None:
        path = os.path.abspath(filename) if not filename.startswith("<") else filename
        internal = (path.startswith(_TORCH_DIR) or path.startswith(_OWN_DIR)
                    or filename.startswith("<frozen")
                    or os.path.basename(filename) in ("runpy.py", "contextlib.py",
                                                      "functools.py"))
        _internal_files[filename] = internal
    return internal


# The methods through which torch hands a call to a mode or a tensor
# subclass: what runs inside one belongs to the handler, not to the user's
# line that made the call.
_HANDLERS = frozenset(("__torch_function__", "__torch_dispatch__"))


def user_site(depth: int = 2) -> Optional[Site]:
    """The innermost frame outside torch, ddpguard and the standard runners,
    and outside the outermost __torch_function__ / __torch_dispatch__ of the
    program's own modes and tensor subclasses."""
    try:
        f = sys._getframe(depth)
    except ValueError:
        return None
    found: Optional[Site] = None
    while f is not None:
        code = f.f_code
        if not _is_internal(code.co_filename):
            if code.co_name in _HANDLERS:
                found = None
            elif found is None:
                found = (code.co_filename, f.f_lineno, code.co_name)
        f = f.f_back
    return found


@dataclass
class Write:
    kind: str                 # "inplace", "optimizer" or "ddp"
    what: str                 # the op, "SGD.step()", the broadcast
    site: Optional[Site]
    grad_enabled: bool = True
    module: Any = None        # the module whose forward ran the op, or the DDP
    optimizer: Any = None
    in_forward: Optional[Site] = None  # ddp: the forward whose broadcast it was
    seq: int = 0              # the write counter's value after it (orders writes)


@dataclass
class Span:
    lo: int                   # first autograd sequence number it created
    hi: int                   # one past the last
    site: Optional[Site]
    what: str                 # "forward of Net" or "torch.sigmoid"
    module: Any = None


class _Timeline:
    """Spans in the order they were created; a node's sequence number finds its span."""

    LIMIT = 50_000

    def __init__(self) -> None:
        self.los: list[int] = []
        self.spans: list[Span] = []
        self.last_hi = 0

    def add(self, span: Span) -> None:
        if span.hi <= span.lo:
            return
        if len(self.spans) >= self.LIMIT:
            del self.los[: self.LIMIT // 2]
            del self.spans[: self.LIMIT // 2]
        self.los.append(span.lo)
        self.spans.append(span)
        self.last_hi = span.hi

    def find(self, sequence_nr: int) -> Optional[Span]:
        i = bisect.bisect_right(self.los, sequence_nr) - 1
        if i >= 0 and self.spans[i].lo <= sequence_nr < self.spans[i].hi:
            return self.spans[i]
        return None


class _Writes:
    """Writes per storage, the last few each; two generations bound the memory."""

    PER_STORAGE = 16
    LIMIT = 8192

    def __init__(self) -> None:
        self.current: dict[int, collections.deque] = {}
        self.previous: dict[int, collections.deque] = {}
        self.count = 0  # writes and optimizer steps so far

    def tick(self) -> int:
        self.count += 1
        return self.count

    def add(self, tensor: torch.Tensor, version: int, write: Write) -> None:
        key = storage_key(tensor)
        if key is None:
            return
        write.seq = self.tick()
        entries = self.current.get(key)
        if entries is None:
            entries = self.previous.pop(key, None) or collections.deque(
                maxlen=self.PER_STORAGE)
            self.current[key] = entries
            if len(self.current) > self.LIMIT:
                self.previous, self.current = self.current, {}
        entries.append((version, write))

    def of(self, tensor: torch.Tensor) -> list[tuple[int, Write]]:
        key = storage_key(tensor)
        if key is None:
            return []
        entries = self.current.get(key) or self.previous.get(key) or ()
        return list(entries)


def storage_key(tensor: torch.Tensor) -> Optional[int]:
    try:
        return tensor.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError, AttributeError):
        return None


def _op_name(func: Any, args: tuple, kwargs: dict) -> str:
    name = getattr(func, "__name__", repr(func))
    owner = getattr(func, "__qualname__", name).split(".")[0]
    if owner in ("TensorBase", "Tensor", "_TensorBase"):
        spelled = f"Tensor.{name}"
    else:
        module = getattr(func, "__module__", None) or "torch"
        spelled = f"{module}.{name}"
    if kwargs.get("inplace") is True or (
            name in _POSITIONAL_INPLACE and len(args) > _POSITIONAL_INPLACE[name]
            and args[_POSITIONAL_INPLACE[name]] is True):
        spelled += "(inplace=True)"
    elif "out" in kwargs:
        spelled += "(out=...)"
    return spelled


# Functionals whose in-place switch is often passed by position.
_POSITIONAL_INPLACE = {"dropout": 3, "alpha_dropout": 3, "feature_alpha_dropout": 3,
                       "dropout1d": 3, "dropout2d": 3, "dropout3d": 3,
                       "threshold": 3, "relu": 1, "relu6": 1, "elu": 2, "selu": 1,
                       "celu": 2, "leaky_relu": 2, "hardtanh": 3, "rrelu": 4,
                       "hardsigmoid": 1, "hardswish": 1, "silu": 1, "mish": 1}


class _Thread(threading.local):
    """One thread's part of the state (its attributes are per thread)."""

    TIMELINES = 64  # beyond this many, the oldest ended threads' timelines go

    def __init__(self, timelines: dict) -> None:
        self.stack: list = []                 # modules whose forward runs
        self.forward_site: Optional[Site] = None  # the outermost one's call site
        self.steps: list = []                 # optimizer steps in progress
        self.mode_off = False                 # the armed mode is popped
        self.timeline = _Timeline()
        timelines[threading.get_ident()] = self.timeline
        if len(timelines) > self.TIMELINES:
            alive = {t.ident for t in threading.enumerate()}
            ended = [ident for ident in timelines if ident not in alive]
            for ident in ended[: len(timelines) - self.TIMELINES]:
                del timelines[ident]


@dataclass
class State:
    armed: bool
    writes: _Writes = field(default_factory=_Writes)
    roots: dict = field(default_factory=dict)      # id(module) -> weakref, outermost ones
    optimizers: "weakref.WeakSet[torch.optim.Optimizer]" = field(
        default_factory=weakref.WeakSet)
    step_log: dict = field(default_factory=dict)   # id(optimizer) -> its last steps
    timelines: dict = field(default_factory=dict)  # thread ident -> its _Timeline
    silent: Any = None                             # _silent.SilentWrites in that mode
    thread: _Thread = field(init=False)

    def __post_init__(self) -> None:
        self.thread = _Thread(self.timelines)

    def live_roots(self) -> list:
        return _live_roots(self)

    def find_span(self, sequence_nr: int) -> Optional[Span]:
        """The span that created a node of this number: the calling thread's
        (a backward mostly runs where its forward ran), else the one other
        thread's that has one; None where several others have one."""
        own = self.thread.timeline.find(sequence_nr)
        if own is not None:
            return own
        found = [span for t in list(self.timelines.values()) if t is not self.thread.timeline
                 for span in (t.find(sequence_nr),) if span is not None]
        return found[0] if len(found) == 1 else None


def _live_roots(state: "State") -> list:
    return [m for m in (r() for r in list(state.roots.values())) if m is not None]


def _tensor_versions(args: tuple, kwargs: dict) -> list:
    found = []
    for a in args:
        if isinstance(a, torch.Tensor):
            found.append((a, a._version))
        elif type(a) is list or type(a) is tuple:
            for b in a:
                if isinstance(b, torch.Tensor):
                    found.append((b, b._version))
    out = kwargs.get("out")
    if out is not None:
        for b in (out if isinstance(out, (list, tuple)) else (out,)):
            if isinstance(b, torch.Tensor):
                found.append((b, b._version))
    return found


def _saved_entry(t: Any) -> Optional[tuple]:
    """(weak reference, version) of a tensor ctx.save_for_backward got."""
    if not isinstance(t, torch.Tensor):
        return None
    try:
        return (weakref.ref(t), t._version)
    except (RuntimeError, TypeError):  # no version counter, or no weak references
        return None


def saved_by_function(node: Any, now: int, expected: int) -> Optional[torch.Tensor]:
    """The tensor a Python Function's node saved at version `expected` that is
    at version `now`: the first such, in the order the node unpacks them, as
    autograd raises at the first stale one."""
    for entry in getattr(node, "_ddpguard_saved", None) or ():
        t = entry[0]() if entry is not None else None
        if t is not None and entry[1] == expected and t._version == now:
            return t
    return None


def _output_sequence_hi(output: Any) -> int:
    """Past the largest sequence number of the output's nodes (torch < 2.2)."""
    hi = 0
    for t in (output if isinstance(output, (list, tuple)) else (output,)):
        fn = getattr(t, "grad_fn", None) if isinstance(t, torch.Tensor) else None
        if fn is not None:
            hi = max(hi, fn._sequence_nr() + 1)
    return hi


class _WriteMode(TorchFunctionMode):
    """Sees every torch function and Tensor method called from Python: the
    version counters of its tensor arguments before and after say whether it
    wrote them (in-place ops, ``out=``, ``inplace=True``, indexed assignment);
    outside module forwards, the nodes it created go on the timeline."""

    def __init__(self, state: State) -> None:
        super().__init__()
        self.state = state

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if kwargs is None:
            kwargs = {}
        st = self.state
        name = getattr(func, "__name__", None)
        # The op that saved them has finished: fingerprint before anything writes.
        if st is not None and st.silent is not None and st.silent.unfingerprinted:
            st.silent.flush()
        # Attribute reads and sets (t.shape, p.grad = None) cannot bump a version;
        # after disable() the mode may stay on other threads' stacks, inert.
        if name == "__get__" or name == "__set__" or st is None:
            return func(*args, **kwargs)
        th = st.thread
        if th.steps:
            return func(*args, **kwargs)
        try:
            seen = _tensor_versions(args, kwargs)
        except RuntimeError:  # e.g. a tensor subclass without a version counter
            seen = []
        outside = not th.stack
        if outside:
            lo = _next_sequence_nr() if _next_sequence_nr else th.timeline.last_hi
        result = func(*args, **kwargs)
        site = None
        for t, v in seen:
            try:
                now = t._version
            except RuntimeError:  # a tensor without a version counter
                continue
            if now != v:
                if site is None:  # the innermost user line: the write itself
                    site = user_site(2)
                st.writes.add(t, now, Write(
                    "inplace", _op_name(func, args, kwargs), site,
                    grad_enabled=torch.is_grad_enabled(),
                    module=th.stack[-1] if th.stack else None))
        if outside:
            hi = _next_sequence_nr() if _next_sequence_nr else _output_sequence_hi(result)
            if hi > lo:
                th.timeline.add(Span(lo, hi, site or user_site(2),
                                     _op_name(func, args, kwargs)))
        return result


class Recorder:
    """Installs and removes the hooks; one per process."""

    def __init__(self, armed: bool, silent_fingerprint: Optional[str] = None) -> None:
        self.state = State(armed=armed)
        self.handles: list = []
        self.mode: Optional[_WriteMode] = None
        self.restore: list = []
        # The silent-writes mode (armed too): saved-tensor hooks, _silent.py.
        self.silent = (SilentWrites(silent_fingerprint, self.state.writes)
                       if silent_fingerprint else None)
        self.state.silent = self.silent

    def install(self) -> None:
        st = self.state
        self._wrap_module_call()
        from torch.optim import optimizer as optim_mod

        def step_pre(opt, args, kwargs):
            if self.silent is not None and self.silent.unfingerprinted:
                self.silent.flush()
            if self.mode is not None:  # from its next step on, the whole step
                self._without_mode(type(opt), "step")
            st.optimizers.add(opt)
            params = [p for g in opt.param_groups for p in g["params"]]
            # The step's own ops need no watching: its writes are found below.
            popped = self._pop_mode()
            st.thread.steps.append((opt, user_site(2), params, [p._version for p in params],
                             popped))

        def step_post(opt, args, kwargs):
            steps = st.thread.steps
            if not steps:
                return
            opt, site, params, versions, popped = steps.pop()
            # One record per step, not per parameter: the versions say which
            # parameters it wrote (read at a failure, _analysis.py).
            log = st.step_log.get(id(opt))
            if log is None:
                log = st.step_log[id(opt)] = collections.deque(maxlen=64)
            log.append((Write("optimizer", f"{type(opt).__name__}.step()", site,
                              grad_enabled=False, optimizer=opt, seq=st.writes.tick()),
                        params, versions, [p._version for p in params]))
            if popped:
                self._push_mode()

        self.handles.append(optim_mod.register_optimizer_step_pre_hook(step_pre))
        self.handles.append(optim_mod.register_optimizer_step_post_hook(step_post))

        self._patch_ddp()
        self._record_saves()
        if st.armed:
            self.mode = _WriteMode(st)
            self.mode.__enter__()
            self._arm_new_threads()
            # torch's own Python code runs slower with any mode on the stack
            # (measured: about 0.1 ms a call for each of these on the small
            # benchmark model) and writes nothing a graph saved.
            self._without_mode(torch.Tensor, "backward")
            self._without_mode(torch.optim.Optimizer, "zero_grad")
        if self.silent is not None:
            self.silent.message.prepare()  # before the hooks: its probe saves without them
            self.silent.push()
            import torch.utils.checkpoint as checkpointing
            original = checkpointing.checkpoint
            checkpointing.checkpoint = self.silent.wrap_checkpoint(original, user_site)
            self.restore.append(lambda: setattr(checkpointing, "checkpoint", original))

    def _arm_new_threads(self) -> None:
        """Threads started from now on get the armed mode (torch's mode stack
        is per thread): threading's profile hook runs once in each new
        thread, pushes the mode and hands the thread to the hook that was
        there before, if any."""
        getprofile = getattr(threading, "getprofile", None)  # Python 3.10+
        previous = getprofile() if getprofile else getattr(threading, "_profile_hook", None)
        recorder = self

        def arm_thread(frame, event, arg):
            sys.setprofile(previous)
            if recorder.mode is not None:
                recorder.state.thread.mode_off = False
                torch._C._push_on_torch_function_stack(recorder.mode)
            if recorder.silent is not None:  # saved-tensor hooks are per thread too
                recorder.silent.push()
            if previous is not None:
                return previous(frame, event, arg)
            return None

        threading.setprofile(arm_thread)
        self.restore.append(lambda: threading.setprofile(previous))

    def _without_mode(self, owner: type, name: str) -> None:
        """owner.name, wrapped to run with the armed mode off the stack."""
        original = owner.__dict__.get(name)
        if original is None or getattr(original, "_ddpguard_without_mode", False):
            return
        recorder = self

        @functools.wraps(original)
        def without_mode(*args, **kwargs):
            popped = recorder._pop_mode()
            try:
                return original(*args, **kwargs)
            finally:
                if popped:
                    recorder._push_mode()

        without_mode._ddpguard_without_mode = True  # type: ignore[attr-defined]
        setattr(owner, name, without_mode)
        self.restore.append(lambda: setattr(owner, name, original))

    def _pop_mode(self) -> bool:
        """Takes the armed mode off the torch-function mode stack if it is on
        top (so torch's own code runs at full speed); False if it was not."""
        mode = self.mode
        th = self.state.thread
        if mode is None or th.mode_off:
            return False
        n = torch._C._len_torch_function_stack()
        if n == 0 or torch._C._get_function_stack_at(n - 1) is not mode:
            return False  # another mode above ours: leave the stack alone
        torch._C._pop_torch_function_stack()
        th.mode_off = True
        return True

    def _push_mode(self) -> None:
        torch._C._push_on_torch_function_stack(self.mode)
        self.state.thread.mode_off = False

    def reset(self) -> None:
        """Forgets optimizer steps that raised (their post-hook never ran)."""
        steps = self.state.thread.steps
        while steps:
            if steps.pop()[-1]:
                self._push_mode()

    def _wrap_module_call(self) -> None:
        """nn.Module.__call__, wrapped: the outermost forward's call site and
        autograd sequence range, the modules whose forward runs (for names),
        and, in the armed mode, torch's own modules run without the mode
        (their ops cannot write but through their arguments, which are
        compared here). The global forward hooks would give the same, but
        force every module call onto the slow path (measured: +11% per step
        on the small benchmark model)."""
        st = self.state
        recorder = self
        original = torch.nn.Module.__call__
        builtin: dict[type, bool] = {}

        @functools.wraps(original)
        def __call__(module, *args, **kwargs):
            th = st.thread
            kind = type(module)
            own = builtin.get(kind)
            if own is None:
                own = builtin[kind] = kind.__module__.startswith("torch.")
            if th.stack:  # inside a forward: the fast paths
                if recorder.mode is None or (own and th.mode_off):
                    return original(module, *args, **kwargs)
                if not own and not th.mode_off:
                    th.stack.append(module)  # names the module of a write
                    try:
                        return original(module, *args, **kwargs)
                    finally:
                        th.stack.pop()
            outermost = not th.stack
            if outermost:
                site = th.forward_site = user_site(2)
                lo = _next_sequence_nr() if _next_sequence_nr else th.timeline.last_hi
                if id(module) not in st.roots:
                    st.roots[id(module)] = weakref.ref(
                        module, lambda ref, key=id(module):
                        st.roots.get(key) is ref and st.roots.pop(key))
            th.stack.append(module)
            switched = 0
            seen = None
            if recorder.mode is not None:
                if own and not th.mode_off:
                    if recorder._pop_mode():
                        switched = 1
                        seen = _tensor_versions(args, kwargs)
                elif not own and th.mode_off and not th.steps:
                    recorder._push_mode()
                    switched = -1
            result = None
            try:
                result = original(module, *args, **kwargs)
                return result
            finally:
                if switched == 1:
                    for t, v in seen:
                        now = t._version
                        if now != v:
                            st.writes.add(t, now, Write(
                                "inplace", f"nn.{kind.__name__}(inplace=True)"
                                if getattr(module, "inplace", False) is True else
                                f"{kind.__name__}.forward", user_site(1),
                                grad_enabled=torch.is_grad_enabled(), module=module))
                    recorder._push_mode()
                elif switched == -1:
                    recorder._pop_mode()
                th.stack.pop()
                if outermost:
                    hi = (_next_sequence_nr() if _next_sequence_nr
                          else _output_sequence_hi(result))
                    th.timeline.add(Span(lo, hi, site, f"forward of {kind.__name__}",
                                         module))
                    th.forward_site = None
                    if recorder.silent is not None and recorder.silent.unfingerprinted:
                        recorder.silent.flush()

        torch.nn.Module.__call__ = __call__
        self.restore.append(lambda: setattr(torch.nn.Module, "__call__", original))

    def _patch_ddp(self) -> None:
        try:
            from torch.nn.parallel import DistributedDataParallel as DDP
        except ImportError:
            return
        original = DDP.__dict__.get("_sync_buffers")
        if original is None:
            return
        st = self.state

        @functools.wraps(original)
        def _sync_buffers(ddp, *args, **kwargs):
            buffers = list(ddp.module.buffers())
            before = [b._version for b in buffers]
            result = original(ddp, *args, **kwargs)
            th = st.thread
            site = th.forward_site if th.stack else user_site(2)
            what = "DistributedDataParallel's buffer broadcast from rank 0"
            for b, v in zip(buffers, before):
                now = b._version
                if now != v:
                    st.writes.add(b, now, Write("ddp", what, site, grad_enabled=False,
                                                module=ddp,
                                                in_forward=site if th.stack else None))
            return result

        DDP._sync_buffers = _sync_buffers
        self.restore.append(lambda: setattr(DDP, "_sync_buffers", original))

    def _record_saves(self) -> None:
        """FunctionCtx.save_for_backward, wrapped: which tensors a Python
        autograd.Function (a torch.compile'd graph's too) saved, at which
        versions, so that a stale one is named without unpacking them
        (unpacking a stale one raises autograd's error)."""
        from torch.autograd.function import FunctionCtx
        original = FunctionCtx.__dict__.get("save_for_backward")
        if original is None:
            return

        @functools.wraps(original)
        def save_for_backward(ctx, *tensors):
            try:
                ctx._ddpguard_saved = tuple(_saved_entry(t) for t in tensors)
            except AttributeError:  # a context that takes no attributes
                pass
            return original(ctx, *tensors)

        FunctionCtx.save_for_backward = save_for_backward
        self.restore.append(lambda: setattr(FunctionCtx, "save_for_backward", original))

    def uninstall(self) -> None:
        if self.silent is not None:
            try:
                self.silent.pop()
            except RuntimeError:
                pass  # popped already (a program that left hooks of its own above)
        if self.mode is not None:
            if not self.state.thread.mode_off:
                try:
                    self.mode.__exit__(None, None, None)
                except (RuntimeError, AssertionError):
                    pass  # another mode was pushed above it
            self.mode.state = None  # inert where it stays (other threads' stacks)
            self.mode = None
        for h in self.handles:
            h.remove()
        self.handles.clear()
        for undo in self.restore:
            undo()
        self.restore.clear()
